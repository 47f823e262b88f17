/** Webhook registration with the SSRF guard on (no OPENWOP_WEBHOOK_ALLOW_PRIVATE): validation, refusals, delivery-time re-validation, discovery, the test seam. */
import { randomBytes } from 'node:crypto';
import { WebhookDispatcherService } from '../../src/capabilities/webhooks/webhook-dispatcher.service';
import { WebhooksService } from '../../src/capabilities/webhooks/webhooks.service';
import { installChains, noopChain, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';

const WH = ['webhooks:manage', 'webhooks:read'];

describe('webhooks: registration and the egress guard', () => {
  let t: TestApp;
  let key: string;
  const dns = new Map<string, string[]>();

  beforeAll(async () => {
    t = await createTestApp({
      env: {
        OPENWOP_CREDENTIAL_KEYS: `k1:${randomBytes(32).toString('base64')}`,
        OPENWOP_SCHEDULER_ENABLED: 'true',
        OPENWOP_WEBHOOK_POLL_MS: '25',
        OPENWOP_WEBHOOK_MAX_ATTEMPTS: '1',
        OPENWOP_TEST_SEAMS: 'true',
      },
    });
    key = await t.key({ tenant: 'acme', scopes: [...WH, 'runs:create', 'runs:read'] });
    // Names resolve from this table, so no test depends on the network's DNS.
    const resolver = async (host: string) => {
      const a = dns.get(host);
      if (!a) throw Object.assign(new Error(`no such host ${host}`), { code: 'ENOTFOUND' });
      return a.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    };
    t.app.get(WebhooksService).resolver = resolver;
    t.app.get(WebhookDispatcherService).resolver = resolver;
  });
  afterAll(async () => t?.close());

  const post = (body: unknown, token = key) => t.http('POST', '/v1/webhooks', { token, body });

  it('advertises webhooks with the v1 signature algorithm', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.webhooks).toEqual({ supported: true, signatureAlgorithms: ['v1'] });
    expect(d.body.capabilities.webhooks).toEqual(d.body.webhooks);
  });

  it.each([
    ['missing url', { events: ['run.completed'] }],
    ['missing events', { url: 'https://hooks.example/x' }],
    ['empty events', { url: 'https://hooks.example/x', events: [] }],
    ['events not strings', { url: 'https://hooks.example/x', events: [1] }],
    ['not an event type', { url: 'https://hooks.example/x', events: ['completed'] }],
    ['url not a string', { url: 42, events: ['run.completed'] }],
    ['caller-chosen secret', { url: 'https://hooks.example/x', events: ['run.completed'], secret: 'mine' }],
    ['unknown field', { url: 'https://hooks.example/x', events: ['run.completed'], extra: true }],
    ['empty tags', { url: 'https://hooks.example/x', events: ['run.completed'], tags: [] }],
    ['malformed tenantId', { url: 'https://hooks.example/x', events: ['run.completed'], tenantId: '../x' }],
  ])('400 validation_error: %s', async (_name, body) => {
    const r = await post(body);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('validation_error');
    expect(Object.keys(r.body).every((k) => ['error', 'message', 'details'].includes(k))).toBe(true);
  });

  it('400 for a body that is not a JSON object', async () => {
    expect((await t.http('POST', '/v1/webhooks', { token: key, rawBody: '[1,2]', headers: { 'content-type': 'application/json' } })).status).toBe(400);
    expect((await t.http('POST', '/v1/webhooks', { token: key, rawBody: '{"url":', headers: { 'content-type': 'application/json' } })).status).toBe(400);
  });

  it.each([
    'not a url',
    'http://hooks.example/x',
    'http://127.0.0.1:65535/',
    'https://127.0.0.1/',
    'https://10.0.0.1/',
    'https://172.16.5.4/',
    'https://192.168.0.10/',
    'https://169.254.169.254/computeMetadata/v1/instance/service-accounts/default/token',
    'https://[::1]/',
    'https://[fd00::1]/',
    'https://[fe80::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://localhost/',
    'https://metadata.google.internal/',
    'https://user:pass@hooks.example/',
    'https://private.example/',
    'https://mixed.example/',
    'https://[::ffff:0:7f00:1]/',
    'https://[64:ff9b:1::7f00:1]/',
    'https://[2002:a9fe:a9fe::]/',
    'https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/',
    'https://[2600::5efe:a00:1]/',
    'https://nat64.example/',
    'https://hooks.example:8443/x',
    'https://93.184.216.34:22/',
  ])('400 webhook_url_rejected: %s', async (url) => {
    dns.set('private.example', ['10.20.30.40']);
    dns.set('mixed.example', ['93.184.216.34', '127.0.0.1']);
    dns.set('nat64.example', ['64:ff9b:1::7f00:1']);
    dns.set('hooks.example', ['93.184.216.34']);
    const r = await post({ url, events: ['run.completed'] });
    expect({ url, status: r.status, error: r.body.error }).toEqual({ url, status: 400, error: 'webhook_url_rejected' });
  });

  it('accepts a public https URL, and a name that does not resolve yet (delivery re-validates it)', async () => {
    dns.set('hooks.example', ['93.184.216.34']);
    const ok = await post({ url: 'https://hooks.example/x', events: ['run.completed'], tags: ['prod'] });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ url: 'https://hooks.example/x', events: ['run.completed'], tags: ['prod'], signatureAlgorithm: 'v1' });
    const later = await post({ url: 'https://not-yet.example/x', events: ['run.completed'] });
    expect(later.status).toBe(201);
    for (const id of [ok.body.webhookId, later.body.webhookId]) expect((await t.http('DELETE', `/v1/webhooks/${id}`, { token: key })).status).toBe(204);
  });

  it('404 subscription_not_found for an unknown id, on every route', async () => {
    for (const [m, u] of [['DELETE', '/v1/webhooks/wh-does-not-exist'], ['GET', '/v1/webhooks/wh-does-not-exist'], ['GET', '/v1/webhooks/wh-does-not-exist/deliveries']] as const) {
      const r = await t.http(m, u, { token: key });
      expect({ u, status: r.status, error: r.body.error }).toEqual({ u, status: 404, error: 'subscription_not_found' });
    }
    expect((await t.http('GET', '/v1/webhooks/wh-x/deliveries?limit=0', { token: key })).status).toBe(400);
    expect((await t.http('GET', '/v1/webhooks/wh-x/deliveries?status=lost', { token: key })).status).toBe(400);
  });

  it('re-resolves at delivery and refuses a name that now points at a private address (DNS rebinding)', async () => {
    dns.set('rebind.example', ['93.184.216.34']);
    const reg = await post({ url: 'https://rebind.example/hook', events: ['run.completed'] });
    expect(reg.status).toBe(201);
    dns.set('rebind.example', ['127.0.0.1']);
    await installChains(t, 'acme', 'vendor.test.chains', { 'vendor.test.chain': noopChain(1) });
    const run = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.chain' } });
    await waitForStatus(t, key, run.body.runId, ['completed']);
    const end = Date.now() + 10_000;
    let hist: any[] = []; // eslint-disable-line @typescript-eslint/no-explicit-any
    while (Date.now() < end) {
      hist = (await t.http('GET', `/v1/webhooks/${reg.body.webhookId}/deliveries`, { token: key })).body.deliveries;
      if (hist[0]?.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(hist[0]).toMatchObject({ status: 'failed', attempts: 1 });
    expect(hist[0].lastError).toMatch(/target refused: .*127\.0\.0\.1/);
    expect(hist[0].lastStatusCode).toBeUndefined();
  });

  it('the test surface seam registers, lists and unregisters in the caller\'s own tenant only', async () => {
    const seam = (tenantId: string, op: string, args: Record<string, unknown>, token = key) => t.http('POST', '/v1/host/sample/test/surface', { token, body: { tenantId, surface: 'webhooks', op, args } });
    const ids = async (tenantId: string, token = key) => ((await seam(tenantId, 'list', {}, token)).body.webhooks as Array<{ webhookId: string }>).map((w) => w.webhookId);
    const reg = await seam('acme', 'register', { url: 'https://not-yet.example/iso', events: ['run.completed'] });
    expect(reg.status).toBe(200);
    const id = reg.body.webhookId;
    expect(await ids('acme')).toContain(id);
    expect((await seam('acme', 'register', { url: 'http://127.0.0.1/', events: ['run.completed'] })).body.error).toBe('webhook_url_rejected');
    expect((await t.http('POST', '/v1/host/sample/test/surface', { token: key, body: { tenantId: 'acme', surface: 'kv', op: 'list' } })).status).toBe(404);
    expect((await seam('acme', 'unregister', { webhookId: id })).status).toBe(200);
    expect(await ids('acme')).not.toContain(id);
  });

  it('tenant B can neither list, register nor unregister tenant A\'s webhooks through the seam: naming another tenant acts in the caller\'s own sandbox tenant, never the named one', async () => {
    const b = await t.key({ tenant: 'acme-b', scopes: [...WH, 'runs:create', 'runs:read'] });
    const seam = (token: string, tenantId: string, op: string, args: Record<string, unknown> = {}) =>
      t.http('POST', '/v1/host/sample/test/surface', { token, body: { tenantId, surface: 'webhooks', op, args } });
    const hooks = async (token: string, tenantId: string) => ((await seam(token, tenantId, 'list')).body.webhooks as Array<{ webhookId: string }>).map((w) => w.webhookId);
    const aHook = (await seam(key, 'acme', 'register', { url: 'https://not-yet.example/a', events: ['run.completed'] })).body.webhookId;
    const rowsOfA = () => t.ds.query(`SELECT "id" FROM "webhook_subscription" WHERE "tenant" = 'acme' ORDER BY "id"`);
    const before = await rowsOfA();

    expect(await hooks(b, 'acme')).not.toContain(aHook);
    expect((await seam(b, 'acme', 'unregister', { webhookId: aHook })).body.error).toBe('subscription_not_found');
    const planted = await seam(b, 'acme', 'register', { url: 'https://not-yet.example/b-in-a', events: ['run.completed'] });
    expect(planted.status).toBe(200);
    // B's "acme" is B's own sandbox: the row is not A's, and A does not see it.
    expect(await t.ds.query(`SELECT "tenant" FROM "webhook_subscription" WHERE "id" = $1`, [planted.body.webhookId])).toEqual([{ tenant: 'acme-b/seam/acme' }]);
    expect(await hooks(key, 'acme')).not.toContain(planted.body.webhookId);
    expect(await hooks(b, 'acme')).toEqual([planted.body.webhookId]);
    // Nor by naming its own tenant and A's webhook id.
    expect((await seam(b, 'acme-b', 'unregister', { webhookId: aHook })).body.error).toBe('subscription_not_found');
    expect(await hooks(b, 'acme-b')).not.toContain(aHook);
    expect(await rowsOfA()).toEqual(before);
    // A sandbox name is an identifier like any tenant's: nothing can be spliced into the sandbox's tenant.
    expect((await seam(b, 'acme/../acme', 'list')).body.error).toBe('validation_error');

    // The other way round too: A cannot reach B's tenant, and B's own registration stays B's.
    const bHook = (await seam(b, 'acme-b', 'register', { url: 'https://not-yet.example/b', events: ['run.completed'] })).body.webhookId;
    expect(await hooks(key, 'acme-b')).not.toContain(bHook);
    expect((await seam(key, 'acme-b', 'unregister', { webhookId: bHook })).body.error).toBe('subscription_not_found');
    expect((await t.ds.query(`SELECT "tenant" FROM "webhook_subscription" WHERE "id" = $1`, [bHook]))).toEqual([{ tenant: 'acme-b' }]);
    for (const [token, tenant, hook] of [[key, 'acme', aHook], [b, 'acme-b', bHook], [b, 'acme', planted.body.webhookId]] as const) expect((await seam(token, tenant, 'unregister', { webhookId: hook })).status).toBe(200);
  });

  it('a workspace-bound caller acts in its own workspace through the seam, never the tenant\'s other workspaces', async () => {
    const w1 = await t.key({ tenant: 'acme', workspace: 'ws-1', scopes: [...WH, 'runs:read'] });
    const w2 = await t.key({ tenant: 'acme', workspace: 'ws-2', scopes: [...WH, 'runs:read'] });
    const seam = (token: string, op: string, args: Record<string, unknown> = {}) =>
      t.http('POST', '/v1/host/sample/test/surface', { token, body: { tenantId: 'acme', surface: 'webhooks', op, args } });
    const reg = await seam(w1, 'register', { url: 'https://not-yet.example/ws-1', events: ['run.completed'] });
    expect(reg.status).toBe(200);
    expect((await t.ds.query(`SELECT "workspace" FROM "webhook_subscription" WHERE "id" = $1`, [reg.body.webhookId]))).toEqual([{ workspace: 'ws-1' }]);
    expect(((await seam(w2, 'list')).body.webhooks as Array<{ webhookId: string }>).map((w) => w.webhookId)).not.toContain(reg.body.webhookId);
    expect((await seam(w2, 'unregister', { webhookId: reg.body.webhookId })).status).toBe(404);
    expect((await seam(w1, 'unregister', { webhookId: reg.body.webhookId })).status).toBe(200);
  });
});

describe('webhooks: not advertised without a credential store, seam off without seams', () => {
  it('omits the block and refuses registration with 503', async () => {
    const t = await createTestApp();
    try {
      const key = await t.key({ scopes: [...WH, 'runs:read'] });
      expect((await t.http('GET', '/.well-known/openwop')).body.webhooks).toBeUndefined();
      const r = await t.http('POST', '/v1/webhooks', { token: key, body: { url: 'https://93.184.216.34/x', events: ['run.completed'] } });
      expect(r.status).toBe(503);
      expect(r.body.error).toBe('credential_store_unavailable');
      expect((await t.http('POST', '/v1/host/sample/test/surface', { token: key, body: { tenantId: 'a', surface: 'webhooks', op: 'list' } })).status).toBe(404);
    } finally {
      await t.close();
    }
  });
});
