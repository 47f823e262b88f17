/** Webhook delivery end to end: signed (v1) delivery to a local receiver, retries, exhaustion, tenant isolation, restart safety. */
import { createHash, randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { WebhookDispatcherService } from '../../src/capabilities/webhooks/webhook-dispatcher.service';
import { HOST_CONFIG, HostConfig } from '../../src/platform/config/host-config';
import { installChains, noopChain, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';
import { verifySignature, WebhookReceiver } from './webhook-receiver';

const CREDENTIAL_KEYS = `k1:${randomBytes(32).toString('base64')}`;
const ENV = {
  OPENWOP_CREDENTIAL_KEYS: CREDENTIAL_KEYS,
  OPENWOP_WEBHOOK_ALLOW_PRIVATE: 'true',
  // The receivers listen on ephemeral ports: the port list names them like any other (the relaxation does not lift it).
  OPENWOP_WEBHOOK_ALLOWED_PORTS: '1024-65535',
  OPENWOP_SCHEDULER_ENABLED: 'true',
  OPENWOP_WEBHOOK_POLL_MS: '25',
  OPENWOP_WEBHOOK_RETRY_BASE_MS: '100',
  OPENWOP_WEBHOOK_MAX_ATTEMPTS: '3',
  OPENWOP_WEBHOOK_TIMEOUT_MS: '2000',
};
const RUN_SCOPES = ['runs:create', 'runs:read'];
const WH_SCOPES = ['webhooks:manage', 'webhooks:read'];

async function deliveries(t: TestApp, token: string, id: string, until: (d: any[]) => boolean): Promise<any[]> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const end = Date.now() + 15_000;
  for (;;) {
    const r = await t.http('GET', `/v1/webhooks/${id}/deliveries`, { token });
    expect(r.status).toBe(200);
    if (until(r.body.deliveries)) return r.body.deliveries;
    if (Date.now() > end) throw new Error(`deliveries never matched: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

describe('webhooks: delivery', () => {
  let t: TestApp;
  let rx: WebhookReceiver;
  let a: string;
  let b: string;

  beforeAll(async () => {
    rx = await new WebhookReceiver().start();
    t = await createTestApp({ env: ENV });
    a = await t.key({ tenant: 'tenant-a', scopes: [...RUN_SCOPES, ...WH_SCOPES] });
    b = await t.key({ tenant: 'tenant-b', scopes: [...RUN_SCOPES, ...WH_SCOPES] });
    for (const tenant of ['tenant-a', 'tenant-b']) await installChains(t, tenant, 'vendor.test.chains', { 'vendor.test.chain': noopChain(2) });
  });
  afterAll(async () => {
    await t?.close();
    await rx?.close();
  });

  async function register(token: string, path: string, events = ['run.completed']) {
    const r = await t.http('POST', '/v1/webhooks', { token, body: { url: `${rx.url}${path}`, events } });
    expect(r.status).toBe(201);
    return r.body as { webhookId: string; secret: string; secretFingerprint: string };
  }

  async function run(token: string): Promise<string> {
    const r = await t.http('POST', '/v1/runs', { token, body: { workflowId: 'vendor.test.chain' } });
    expect(r.status).toBe(201);
    await waitForStatus(t, token, r.body.runId, ['completed']);
    return r.body.runId as string;
  }

  it('delivers the subscribed events signed with v1; the secret is shown once and never logged', async () => {
    const reg = await register(a, '/signed');
    expect(reg.webhookId).toMatch(/^wh_[0-9a-f]{24}$/);
    expect(reg.secret).toMatch(/^[0-9a-f]{64}$/);
    expect(reg.secretFingerprint).toBe(createHash('sha256').update(reg.secret).digest('hex').slice(0, 8));
    const runId = await run(a);
    await rx.waitFor(() => rx.on('/signed').length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    const got = rx.on('/signed');
    // Only the subscribed type: node and run.started events are not sent.
    expect(got).toHaveLength(1);
    const d = got[0];
    expect(d.headers['content-type']).toBe('application/json');
    expect(d.headers['user-agent']).toMatch(/^openwop-webhook-dispatcher\//);
    expect(d.headers['x-openwop-webhook-id']).toBe(reg.webhookId);
    expect(d.headers['x-openwop-event-type']).toBe('run.completed');
    expect(d.headers['x-openwop-signature-algorithm']).toBe('v1');
    expect(d.headers['x-openwop-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(verifySignature(d.rawBody, d.headers, reg.secret)).toBe(true);
    // A wrong secret or a changed body does not verify.
    expect(verifySignature(d.rawBody, d.headers, 'f'.repeat(64))).toBe(false);
    expect(verifySignature(d.rawBody.replace('run.completed', 'run.failed'), d.headers, reg.secret)).toBe(false);
    expect(d.body).toMatchObject({ runId, tenantId: 'tenant-a', workspaceId: 'tenant-a', event: { type: 'run.completed', runId } });
    expect(typeof d.body.event.sequence).toBe('number');

    const hist = await deliveries(t, a, reg.webhookId, (ds) => ds.some((x) => x.status === 'succeeded'));
    expect(hist).toHaveLength(1);
    expect(hist[0]).toMatchObject({ webhookId: reg.webhookId, runId, eventType: 'run.completed', status: 'succeeded', attempts: 1, lastStatusCode: 200 });
    expect(hist[0].deliveryId).toBe(d.headers['x-openwop-delivery-id']);

    const one = await t.http('GET', `/v1/webhooks/${reg.webhookId}`, { token: a });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ webhookId: reg.webhookId, secretFingerprint: reg.secretFingerprint, signatureAlgorithm: 'v1' });
    expect(one.text).not.toContain(reg.secret);
    const list = await t.http('GET', '/v1/webhooks', { token: a });
    expect(list.text).not.toContain(reg.secret);
    expect(t.logs.join('\n')).not.toContain(reg.secret);
    // At rest the secret is sealed: no column of any table holds it in clear.
    const [{ n }] = await t.ds.query(`SELECT count(*)::int AS n FROM "webhook_subscription" s WHERE row_to_json(s)::text LIKE '%' || $1 || '%'`, [reg.secret]);
    expect(n).toBe(0);
    const [{ c }] = await t.ds.query(`SELECT count(*)::int AS c FROM "credential" WHERE encode("sealed", 'escape') LIKE '%' || $1 || '%'`, [reg.secret]);
    expect(c).toBe(0);
    const monitor = await t.key({ tenant: 'ops', roles: ['monitor'] });
    const metrics = await t.http('GET', '/metrics', { token: monitor });
    expect(metrics.text).toMatch(/openwop_webhook_delivery_attempts_total\{outcome="succeeded"\} [1-9]/);
    await t.http('DELETE', `/v1/webhooks/${reg.webhookId}`, { token: a });
  });

  it('retries a failed attempt with backoff (500 then 200) and records both attempts', async () => {
    const reg = await register(a, '/retry');
    rx.statuses.push(500);
    await run(a);
    await rx.waitFor(() => rx.on('/retry').length >= 2);
    const [first, second] = rx.on('/retry');
    expect(first.headers['x-openwop-delivery-id']).toBe(second.headers['x-openwop-delivery-id']);
    expect(first.rawBody).toBe(second.rawBody);
    expect(verifySignature(second.rawBody, second.headers, reg.secret)).toBe(true);
    const hist = await deliveries(t, a, reg.webhookId, (ds) => ds[0]?.status === 'succeeded');
    expect(hist[0]).toMatchObject({ status: 'succeeded', attempts: 2, lastStatusCode: 200 });
    await t.http('DELETE', `/v1/webhooks/${reg.webhookId}`, { token: a });
  });

  it('connects to the address the guard checked (a name only the guard\'s resolver knows is reached through it)', async () => {
    const dispatcher = t.app.get(WebhookDispatcherService);
    dispatcher.resolver = async (host) => {
      if (host === 'receiver.test') return [{ address: '127.0.0.1', family: 4 }];
      throw Object.assign(new Error(`no such host ${host}`), { code: 'ENOTFOUND' });
    };
    try {
      const reg = await t.http('POST', '/v1/webhooks', { token: a, body: { url: `http://receiver.test:${new URL(rx.url).port}/pinned`, events: ['run.completed'] } });
      expect(reg.status).toBe(201);
      await run(a);
      const hist = await deliveries(t, a, reg.body.webhookId, (ds) => ds[0]?.status === 'succeeded');
      expect(hist[0]).toMatchObject({ status: 'succeeded', attempts: 1 });
      expect(rx.on('/pinned')[0].headers.host).toBe(`receiver.test:${new URL(rx.url).port}`);
      await t.http('DELETE', `/v1/webhooks/${reg.body.webhookId}`, { token: a });
    } finally {
      dispatcher.resolver = undefined;
    }
  });

  it('holds the port list at delivery too: a subscription whose port the list no longer names is refused, and one outside it cannot register', async () => {
    const reg = await register(a, '/narrowed');
    const webhooks = t.app.get<HostConfig>(HOST_CONFIG).webhooks;
    const wide = webhooks.allowedPorts;
    webhooks.allowedPorts = [[443, 443]];
    try {
      const refused = await t.http('POST', '/v1/webhooks', { token: a, body: { url: `${rx.url}/later`, events: ['run.completed'] } });
      expect({ status: refused.status, error: refused.body.error }).toEqual({ status: 400, error: 'webhook_url_rejected' });
      expect(refused.body.details.reason).toMatch(/port \d+ is not an allowed port \(allowed: 443\)/);
      await run(a);
      const hist = await deliveries(t, a, reg.webhookId, (ds) => ds[0]?.status === 'failed');
      expect(hist[0].lastError).toMatch(/^target refused: port \d+ is not an allowed port/);
      expect(rx.on('/narrowed')).toEqual([]);
    } finally {
      webhooks.allowedPorts = wide;
      await t.http('DELETE', `/v1/webhooks/${reg.webhookId}`, { token: a });
    }
  });

  it('gives up after the configured attempts and says why', async () => {
    const reg = await register(a, '/down');
    rx.statuses.push(503, 502, 500);
    await run(a);
    const hist = await deliveries(t, a, reg.webhookId, (ds) => ds[0]?.status === 'failed');
    expect(hist[0]).toMatchObject({ status: 'failed', attempts: 3, lastStatusCode: 500 });
    expect(hist[0].lastError).toMatch(/500/);
    expect(rx.on('/down')).toHaveLength(3);
    const failed = await t.http('GET', `/v1/webhooks/${reg.webhookId}/deliveries?status=failed&limit=1`, { token: a });
    expect(failed.body.deliveries).toHaveLength(1);
    // Past the history window, finished deliveries are pruned; recent ones stay.
    const dispatcher = t.app.get(WebhookDispatcherService);
    expect(await dispatcher.pruneHistory()).toBe(0);
    await t.ds.query(`UPDATE "webhook_delivery" SET "updated_at" = now() - interval '31 days' WHERE "webhook_id" = $1`, [reg.webhookId]);
    expect(await dispatcher.pruneHistory()).toBe(1);
    expect((await t.http('GET', `/v1/webhooks/${reg.webhookId}/deliveries`, { token: a })).body.deliveries).toEqual([]);
    await t.http('DELETE', `/v1/webhooks/${reg.webhookId}`, { token: a });
  });

  it("delivers a tenant's events only to its own subscriptions; another tenant's ids are unknown", async () => {
    const ra = await register(a, '/tenant-a');
    const rb = await register(b, '/tenant-b');
    const runA = await run(a);
    await rx.waitFor(() => rx.on('/tenant-a').length >= 1);
    await new Promise((r) => setTimeout(r, 400));
    expect(rx.on('/tenant-b')).toHaveLength(0);
    expect(rx.on('/tenant-a').map((d) => d.body.runId)).toEqual([runA]);
    const runB = await run(b);
    await rx.waitFor(() => rx.on('/tenant-b').length >= 1);
    expect(rx.on('/tenant-b').map((d) => d.body.runId)).toEqual([runB]);
    expect(verifySignature(rx.on('/tenant-b')[0].rawBody, rx.on('/tenant-b')[0].headers, ra.secret)).toBe(false);

    const listB = await t.http('GET', '/v1/webhooks', { token: b });
    expect(listB.body.webhooks.map((w: { webhookId: string }) => w.webhookId)).toEqual([rb.webhookId]);
    for (const [method, url] of [['GET', `/v1/webhooks/${ra.webhookId}`], ['DELETE', `/v1/webhooks/${ra.webhookId}`], ['GET', `/v1/webhooks/${ra.webhookId}/deliveries`]] as const) {
      const r = await t.http(method, url, { token: b });
      expect({ url, status: r.status, error: r.body.error }).toEqual({ url, status: 404, error: 'subscription_not_found' });
    }
    // Naming another tenant is refused (the membership gate), for registration and removal alike.
    const foreign = await t.http('POST', '/v1/webhooks', { token: b, body: { url: `${rx.url}/x`, events: ['run.completed'], tenantId: 'tenant-a' } });
    expect(foreign.status).toBe(403);
    const foreignDel = await t.http('DELETE', `/v1/webhooks/${rb.webhookId}?tenantId=tenant-a`, { token: b });
    expect(foreignDel.status).toBe(403);
    const own = await t.http('DELETE', `/v1/webhooks/${rb.webhookId}?tenantId=tenant-b`, { token: b });
    expect(own.status).toBe(204);
    expect((await t.http('DELETE', `/v1/webhooks/${rb.webhookId}`, { token: b })).status).toBe(404);
    // Still A's: B's attempts changed nothing.
    expect((await t.http('GET', `/v1/webhooks/${ra.webhookId}`, { token: a })).status).toBe(200);
    await t.http('DELETE', `/v1/webhooks/${ra.webhookId}`, { token: a });
  });

  it('scopes subscriptions to the workspace of a workspace-bound credential', async () => {
    const w1 = await t.key({ tenant: 'tenant-a', workspace: 'w1', scopes: [...RUN_SCOPES, ...WH_SCOPES] });
    const w2 = await t.key({ tenant: 'tenant-a', workspace: 'w2', scopes: [...RUN_SCOPES, ...WH_SCOPES] });
    const reg = await register(w1, '/w1');
    expect((await t.http('GET', `/v1/webhooks/${reg.webhookId}`, { token: w2 })).status).toBe(404);
    const tenantView = await t.http('GET', `/v1/webhooks/${reg.webhookId}`, { token: a });
    expect(tenantView.body).toMatchObject({ workspace: 'w1' });
    await run(w2);
    await run(w1);
    await rx.waitFor(() => rx.on('/w1').length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(rx.on('/w1')).toHaveLength(1);
    expect(rx.on('/w1')[0].body.workspaceId).toBe('w1');
    await t.http('DELETE', `/v1/webhooks/${reg.webhookId}`, { token: w1 });
  });

  it('with tags, delivers only the events of runs whose tags overlap', async () => {
    const r = await t.http('POST', '/v1/webhooks', { token: a, body: { url: `${rx.url}/tagged`, events: ['run.completed'], tags: ['prod', 'eu'] } });
    expect(r.status).toBe(201);
    const start = async (tags?: string[]) => {
      const c = await t.http('POST', '/v1/runs', { token: a, body: { workflowId: 'vendor.test.chain', ...(tags ? { tags } : {}) } });
      expect(c.status).toBe(201);
      await waitForStatus(t, a, c.body.runId, ['completed']);
      return c.body.runId as string;
    };
    await start();
    await start(['staging']);
    const tagged = await start(['eu']);
    await rx.waitFor(() => rx.on('/tagged').length >= 1);
    await new Promise((res) => setTimeout(res, 300));
    expect(rx.on('/tagged').map((d) => d.body.runId)).toEqual([tagged]);
    await t.http('DELETE', `/v1/webhooks/${r.body.webhookId}`, { token: a });
  });

  it('requires the webhooks scopes', async () => {
    const reader = await t.key({ tenant: 'tenant-a', scopes: ['webhooks:read'] });
    const none = await t.key({ tenant: 'tenant-a', scopes: ['runs:read'] });
    const blind = await t.key({ tenant: 'tenant-a', scopes: ['webhooks:manage'] });
    // Without runs:read a credential may not have run events sent anywhere.
    expect((await t.http('POST', '/v1/webhooks', { token: blind, body: { url: `${rx.url}/s`, events: ['run.completed'] } })).status).toBe(403);
    expect((await t.http('DELETE', '/v1/webhooks/wh_x', { token: blind })).status).toBe(404);
    expect((await t.http('POST', '/v1/webhooks', { token: reader, body: { url: `${rx.url}/s`, events: ['run.completed'] } })).status).toBe(403);
    expect((await t.http('GET', '/v1/webhooks', { token: reader })).status).toBe(200);
    expect((await t.http('GET', '/v1/webhooks', { token: none })).status).toBe(403);
    expect((await t.http('DELETE', '/v1/webhooks/wh_x', { token: reader })).status).toBe(403);
    expect((await t.http('GET', '/v1/webhooks')).status).toBe(401);
    // runs:read alone may not register: it takes webhooks:manage, or runs:create (whose callbackUrl already calls out).
    const refused = await t.http('POST', '/v1/webhooks', { token: none, body: { url: `${rx.url}/s`, events: ['run.completed'] } });
    expect([refused.status, refused.body.error, refused.body.details.requiredAnyOfScopes]).toEqual([403, 'forbidden', ['webhooks:manage', 'runs:create']]);
    expect((await t.http('DELETE', '/v1/webhooks/wh_x', { token: none })).status).toBe(403);
    const creator = await t.key({ tenant: 'tenant-a', scopes: ['runs:read', 'runs:create'] });
    const own = await t.http('POST', '/v1/webhooks', { token: creator, body: { url: `${rx.url}/s`, events: ['run.completed'] } });
    expect(own.status).toBe(201);
    expect((await t.http('DELETE', `/v1/webhooks/${own.body.webhookId}`, { token: creator })).status).toBe(204);
  });
});

describe('webhooks: restart-safe, replica-safe delivery', () => {
  it('a delivery claimed by a host that stopped mid-attempt is delivered once by the next host', async () => {
    const rx = await new WebhookReceiver().start();
    // The first host executes runs but sends nothing (no worker): its deliveries wait in the outbox.
    const t1 = await createTestApp({ env: { ...ENV, OPENWOP_SCHEDULER_ENABLED: 'false' } });
    let t2: TestApp | undefined;
    try {
      const key = await t1.key({ tenant: 'tenant-r', scopes: [...RUN_SCOPES, ...WH_SCOPES] });
      await installChains(t1, 'tenant-r', 'vendor.test.chains', { 'vendor.test.chain': noopChain(1) });
      const reg = await t1.http('POST', '/v1/webhooks', { token: key, body: { url: `${rx.url}/restart`, events: ['run.started', 'run.completed'] } });
      expect(reg.status).toBe(201);
      const created = await t1.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.chain' } });
      await waitForStatus(t1, key, created.body.runId, ['completed']);
      const outbox = await t1.ds.query(`SELECT "status" FROM "webhook_delivery" WHERE "tenant" = 'tenant-r' ORDER BY "sequence"`);
      expect(outbox.map((r: { status: string }) => r.status)).toEqual(['pending', 'pending']);
      // The first host claims one delivery, then dies before sending it; its lease then runs out.
      const claimed = await t1.app.get(WebhookDispatcherService).claim(1);
      expect(claimed).toHaveLength(1);
      // A second claimer at the same moment skips the locked/claimed row and takes the other.
      const other = await t1.app.get(WebhookDispatcherService).claim(5);
      expect(other.map((r) => r.id)).not.toContain(claimed[0].id);
      await t1.ds.query(`UPDATE "webhook_delivery" SET "status" = 'pending', "attempts" = 0 WHERE "id" = $1`, [other[0].id]);
      await t1.ds.query(`UPDATE "webhook_delivery" SET "next_attempt_at" = now() - interval '1 second' WHERE "id" = $1`, [claimed[0].id]);
      await t1.stop();

      t2 = await createTestApp({ env: ENV, database: t1.databaseName });
      await rx.waitFor(() => rx.on('/restart').length >= 2);
      await new Promise((r) => setTimeout(r, 300));
      const got = rx.on('/restart');
      expect(got.map((d) => d.body.event.type).sort()).toEqual(['run.completed', 'run.started']);
      expect(verifySignature(got[0].rawBody, got[0].headers, reg.body.secret)).toBe(true);
      const rows = await t2.ds.query(`SELECT "id", "status", "attempts" FROM "webhook_delivery" WHERE "tenant" = 'tenant-r'`);
      expect(rows.every((r: { status: string }) => r.status === 'succeeded')).toBe(true);
      expect(rows.find((r: { id: string }) => r.id === claimed[0].id).attempts).toBe(2);
    } finally {
      // A test that failed before the first host stopped stops it here (a host closes once).
      await t1.stop();
      await t2?.stop();
      await rx.close();
      // The embedded test engine has one database, reset by the next test app; a server's is dropped.
      if (process.env.OPENWOP_TEST_DB_MODE !== 'embedded') {
        const c = new Client({ connectionString: process.env.DATABASE_URL });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS "${t1.databaseName}" WITH (FORCE)`);
        await c.end();
      }
    }
  });
});
