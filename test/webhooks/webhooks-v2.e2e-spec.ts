/**
 * Webhooks under protocol major 2 (docs/webhooks.md "Major 2"), end to end against receivers this test
 * starts: the v2 registration and record, the v2 delivery (body and both header families), Standard
 * Webhooks signatures verified from the spec's recipe (written here, not imported), endpoint
 * verification, the stable message id, secret rotation with its overlap, dead letters, and the v1
 * verifier seam. A major-1 subscription on the same host keeps its v1 delivery.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { WebhooksService } from '../../src/capabilities/webhooks';
import { SCHEMAS_ROOT } from '../../src/platform/schemas/schema-registry';
import { installChains, noopChain, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';

const ENV = {
  OPENWOP_CREDENTIAL_KEYS: `k1:${randomBytes(32).toString('base64')}`,
  OPENWOP_PROTOCOL_MAJORS: '1,2',
  OPENWOP_TEST_SEAMS: 'true',
  OPENWOP_WEBHOOK_ALLOW_PRIVATE: 'true',
  OPENWOP_WEBHOOK_ALLOWED_PORTS: '1024-65535',
  OPENWOP_SCHEDULER_ENABLED: 'true',
  OPENWOP_WEBHOOK_POLL_MS: '25',
  OPENWOP_WEBHOOK_RETRY_BASE_MS: '100',
  OPENWOP_WEBHOOK_MAX_ATTEMPTS: '3',
  OPENWOP_WEBHOOK_TIMEOUT_MS: '2000',
  OPENWOP_WEBHOOK_ROTATION_OVERLAP_SECONDS: '120',
};
const V2 = { 'openwop-version': '2' };

/** The published v2 schemas a delivery and a verification request are held to. */
const schema = (name: string) => JSON.parse(fs.readFileSync(path.join(SCHEMAS_ROOT, 'openwop', 'v2', name), 'utf8'));
const ajv = new Ajv2020({ strict: false, validateFormats: false });
for (const f of ['ids', 'subject', 'agent-ref', 'part', 'orchestrator-decision', 'conversation-event', 'run-event', 'run-event-payloads']) ajv.addSchema(schema(`${f}.schema.json`));
const validDelivery = ajv.compile(schema('webhook-delivery.schema.json'));
const validVerification = ajv.compile(schema('webhook-verification.schema.json'));
const validRunStarted = ajv.compile({ $ref: 'https://openwop.dev/spec/v2/run-event-payloads.schema.json#/$defs/runStarted' });
const SCOPES = ['runs:create', 'runs:read', 'webhooks:manage', 'webhooks:read'];

interface Hit {
  path: string;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  status: number;
}

/**
 * A receiver with a behaviour per path: `/echo*` answers a verification with its challenge, `/noecho*`
 * with `{}`, `/redirect*` with a 307 to `/target`; `/fail*` answers 500 to every delivery, `/flaky*`
 * 500 to the first attempt of each (webhook, run, sequence); everything else 204.
 */
class Receiver {
  readonly hits: Hit[] = [];
  private readonly seen = new Map<string, number>();
  private server?: http.Server;
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const rawBody = Buffer.concat(chunks).toString('utf8');
        let body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
        try {
          body = JSON.parse(rawBody);
        } catch {
          body = undefined;
        }
        const path = req.url ?? '';
        const verification = body?.type === 'openwop.webhook.verification';
        let status = 204;
        let out = '';
        if (path.startsWith('/redirect')) status = 307;
        else if (verification) {
          status = 200;
          out = JSON.stringify(path.startsWith('/noecho') ? {} : { challenge: body.challenge });
        } else if (path.startsWith('/fail')) status = 500;
        else if (path.startsWith('/flaky')) {
          const key = `${req.headers['openwop-webhook-id']}|${body?.runId}|${body?.event?.sequence}`;
          const n = (this.seen.get(key) ?? 0) + 1;
          this.seen.set(key, n);
          status = n === 1 ? 500 : 204;
        }
        this.hits.push({ path, headers: req.headers, rawBody, body, status });
        res.writeHead(status, status === 307 ? { location: `${this.url}/target` } : { 'content-type': 'application/json' });
        res.end(out);
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  on(path: string, deliveriesOnly = true): Hit[] {
    return this.hits.filter((h) => h.path === path && (!deliveriesOnly || h.body?.type !== 'openwop.webhook.verification'));
  }

  async waitFor(pred: () => boolean, timeoutMs = 20_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (!pred()) {
      if (Date.now() > until) throw new Error(`receiver: condition not met in ${timeoutMs} ms (${this.hits.length} hits)`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** webhooks.md §Verification: HMAC-SHA256 of `{timestamp}.{rawBody}` with the secret string, `sha256=<hex>`. */
function v1Verifies(h: Hit, secret: string, family = 'openwop'): boolean {
  const ts = Number(h.headers[`${family}-timestamp`]);
  if (!Number.isInteger(ts) || Math.abs(Date.now() / 1000 - ts) > 300) return false;
  const sig = String(h.headers[`${family}-signature`] ?? '');
  return sig === `sha256=${createHmac('sha256', secret).update(`${ts}.${h.rawBody}`).digest('hex')}`;
}

/**
 * Standard Webhooks 1.0.0 §Signature scheme, from the spec: the key is the base64 body of `whsec_`
 * decoded; each `v1,<base64>` entry of the space-separated `webhook-signature` is HMAC-SHA256 over
 * `{webhook-id}.{webhook-timestamp}.{body}`. Returns how many entries verify under the secret.
 */
function standardMatches(h: Hit, secret: string): { entries: number; matched: number } {
  const id = String(h.headers['webhook-id'] ?? '');
  const ts = String(h.headers['webhook-timestamp'] ?? '');
  const entries = String(h.headers['webhook-signature'] ?? '').split(' ').filter(Boolean);
  if (!id || id.includes('.') || !/^\d+$/.test(ts) || Math.abs(Date.now() / 1000 - Number(ts)) > 300) return { entries: entries.length, matched: 0 };
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${h.rawBody}`).digest();
  const matched = entries.filter((e) => {
    const [v, sig] = e.split(',');
    const given = Buffer.from(sig ?? '', 'base64');
    return v === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  }).length;
  return { entries: entries.length, matched };
}

const whsec = (bytes = 32) => `whsec_${randomBytes(bytes).toString('base64')}`;
const seg = (bound: string) => bound.replace('/', '~2F');

describe('webhooks: major 2', () => {
  let t: TestApp;
  let rx: Receiver;
  let a: string;
  let b: string;

  beforeAll(async () => {
    rx = await new Receiver().start();
    t = await createTestApp({ openApi: false, env: ENV });
    a = await t.key({ tenant: 'tenant-a', scopes: SCOPES });
    b = await t.key({ tenant: 'tenant-b', scopes: SCOPES });
    for (const tenant of ['tenant-a', 'tenant-b']) await installChains(t, tenant, 'vendor.test.chains', { 'vendor.test.chain': noopChain(1) });
  });
  afterAll(async () => {
    await t?.close();
    await rx?.close();
  });

  async function register(token: string, body: Record<string, unknown>) {
    return t.http('POST', '/webhooks', { token, headers: V2, body: { events: ['run.completed'], ...body } });
  }

  /** Runs the noop chain to completion under major 2; its bound run id. */
  async function run(token: string): Promise<string> {
    const r = await t.http('POST', '/runs', { token, headers: V2, body: { workflowId: 'vendor.test.chain' } });
    expect(r.status).toBe(201);
    await waitForStatus(t, token, r.body.runId.split('/')[1], ['completed']);
    return r.body.runId as string;
  }

  it('advertises the v2 webhooks record with both schemes, the retry policy, dead letters and rotation', async () => {
    const d = await t.http('GET', '/.well-known/openwop', { headers: V2 });
    expect(d.body.webhooks).toEqual({
      status: 'experimental', since: '2.0', until: '2027-06-30', witness: 'witnessable-gated',
      signatureAlgorithms: ['v1', 'standard-webhooks-1'],
      retryPolicy: { maxAttempts: 3, backoff: 'exponential' },
      deadLetter: { retentionDays: 30, maxPageSize: 100 },
      secretRotation: { overlapSeconds: 120 },
    });
    // The v1 document is as before: no v2 facet leaks into it.
    const v1 = await t.http('GET', '/.well-known/openwop', {});
    expect(v1.body.webhooks).toEqual({ supported: true, signatureAlgorithms: ['v1'] });
  });

  it('a secret-less registration gets a generated whsec_ secret once; the delivery is the v2 body with both header families, signed v1', async () => {
    const reg = await register(a, { url: `${rx.url}/plain`, events: ['run.started', 'run.completed'] });
    expect(reg.status).toBe(201);
    expect(Object.keys(reg.body).sort()).toEqual(['secret', 'signatureAlgorithms', 'webhookId']);
    expect(reg.body.webhookId).toMatch(/^tenant-a\/wh-[0-9a-f]{24}$/);
    expect(reg.body.signatureAlgorithms).toEqual(['v1']);
    const secret = reg.body.secret as string;
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    const runId = await run(a);
    await rx.waitFor(() => rx.on('/plain').length >= 2);
    const d = rx.on('/plain').find((h) => h.body.event.type === 'run.completed')!;
    // Nothing verified a subscription that did not opt in, and no Standard Webhooks header was added.
    expect(rx.on('/plain', false)).toHaveLength(2);
    // Each delivery validates against the v2 delivery schema; run.started carries the v2 owner (a subject, no principal).
    for (const h of rx.on('/plain')) expect([validDelivery(h.body), validDelivery.errors]).toEqual([true, null]);
    const started = rx.on('/plain').find((h) => h.body.event.type === 'run.started')!;
    expect([validRunStarted(started.body.event.payload), validRunStarted.errors]).toEqual([true, null]);
    expect(started.body.event.payload.owner).toMatchObject({ tenant: 'tenant-a', subject: expect.objectContaining({ tenant: 'tenant-a' }) });
    expect(started.body.event.payload.owner.principal).toBeUndefined();
    expect(started.body.event.sequence).toBe(0);
    expect(Object.keys(d.headers).filter((k) => k.startsWith('webhook-'))).toEqual([]);
    for (const family of ['openwop', 'x-openwop']) {
      expect(d.headers[`${family}-webhook-id`]).toBe(reg.body.webhookId);
      expect(d.headers[`${family}-event-type`]).toBe('run.completed');
      expect(d.headers[`${family}-signature-algorithm`]).toBe('v1');
      expect(v1Verifies(d, secret, family)).toBe(true);
    }
    expect(v1Verifies(d, whsec())).toBe(false);
    expect(d.headers['x-openwop-delivery-id']).toBeUndefined();
    // { runId (bound), workspaceId? (absent: no workspace), event } with the event's run id bound and no v1-only field.
    expect(Object.keys(d.body).sort()).toEqual(['event', 'runId']);
    expect(d.body.runId).toBe(runId);
    expect(d.body.event).toMatchObject({ runId, type: 'run.completed', schemaVersion: 1 });
    // The same event a major-2 poll of the run reads (one rendering for every channel).
    const poll = await t.http('GET', `/runs/${seg(runId)}/events/poll?timeout=0`, { token: a, headers: V2 });
    expect(poll.body.events.find((e: { type: string }) => e.type === 'run.completed')).toEqual(d.body.event);
    expect(d.body.event.correlationId).toBeUndefined();
    // The secret is never logged, and never readable again.
    expect(t.logs.join('\n')).not.toContain(secret);
    const del = await t.http('DELETE', `/webhooks/${seg(reg.body.webhookId)}`, { token: a, headers: V2 });
    expect(del.status).toBe(204);
  });

  it('a supplied secret is not echoed; the v2 body is validated per major (tenantId is v1-only, secret v2-only)', async () => {
    const own = `own-secret-${'x'.repeat(20)}`;
    const reg = await register(a, { url: `${rx.url}/own`, secret: own });
    expect(reg.status).toBe(201);
    expect(reg.text).not.toContain(own);
    expect(reg.body.secret).toBeUndefined();
    const v2tenant = await register(a, { url: `${rx.url}/own`, tenantId: 'tenant-a' });
    expect({ status: v2tenant.status, error: v2tenant.body.error }).toEqual({ status: 400, error: 'validation_error' });
    const v1secret = await t.http('POST', '/v1/webhooks', { token: a, body: { url: `${rx.url}/own`, events: ['run.completed'], secret: own } });
    expect(v1secret.status).toBe(400);
    expect(v1secret.body.error).toBe('validation_error');
    expect(JSON.stringify(v1secret.body.details)).toContain('secret');
    await t.http('DELETE', `/webhooks/${seg(reg.body.webhookId)}`, { token: a, headers: V2 });
  });

  it.each([
    ['standard-webhooks-1 without v1', { signatureAlgorithms: ['standard-webhooks-1'], secret: 'whsec' }],
    ['a repeated value', { signatureAlgorithms: ['v1', 'v1'] }],
    ['an unknown scheme', { signatureAlgorithms: ['v1', 'v2'] }],
    ['an opt-in without a secret', { signatureAlgorithms: ['v1', 'standard-webhooks-1'] }],
    ['a secret not in whsec_ form', { signatureAlgorithms: ['v1', 'standard-webhooks-1'], secret: 'plain-shared-secret-of-some-length' }],
    ['a whsec_ secret of 8 bytes', { signatureAlgorithms: ['v1', 'standard-webhooks-1'], secret: `whsec_${Buffer.alloc(8, 7).toString('base64')}` }],
  ])('refuses an opt-in with %s: 400 validation_error, nothing contacted', async (_label, extra) => {
    const before = rx.hits.length;
    const res = await register(a, { url: `${rx.url}/echo-refused`, ...extra });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'validation_error' });
    expect(rx.hits.length).toBe(before);
  });

  it('verifies an opted-in endpoint once (signed challenge) and refuses no-echo and a redirect, persisting nothing', async () => {
    const secret = whsec();
    const body = (path: string) => ({ url: `${rx.url}${path}`, signatureAlgorithms: ['v1', 'standard-webhooks-1'], secret });
    for (const path of ['/noecho', '/redirect']) {
      const res = await register(a, body(path));
      expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'webhook_endpoint_unverified' });
      expect(rx.on(path, false)).toHaveLength(1);
    }
    expect(rx.on('/target', false)).toHaveLength(0);
    const list = await t.http('GET', '/v1/webhooks', { token: a });
    expect(list.body.webhooks.filter((w: { url: string }) => /noecho|redirect/.test(w.url))).toEqual([]);
    const ok = await register(a, body('/echo'));
    expect(ok.status).toBe(201);
    expect(ok.body.signatureAlgorithms).toEqual(['v1', 'standard-webhooks-1']);
    expect(ok.text).not.toContain(secret.slice(6));
    const [v] = rx.on('/echo', false);
    expect([validVerification(v.body), validVerification.errors]).toEqual([true, null]);
    expect(v.body.challenge).toMatch(/^[A-Za-z0-9_-]{22,128}$/);
    expect(v.headers['openwop-event-type']).toBeUndefined();
    expect(standardMatches(v, secret)).toEqual({ entries: 1, matched: 1 });
    const challenges = rx.hits.filter((h) => h.body?.type === 'openwop.webhook.verification').map((h) => h.body.challenge);
    expect(new Set(challenges).size).toBe(challenges.length);
    await t.http('DELETE', `/webhooks/${seg(ok.body.webhookId)}`, { token: a, headers: V2 });
  });

  it('dual-signs opted-in deliveries; webhook-id is stable across retries and distinct across deliveries', async () => {
    const secret = whsec(48);
    const reg = await register(a, { url: `${rx.url}/flaky`, events: ['run.started', 'run.completed'], signatureAlgorithms: ['v1', 'standard-webhooks-1'], secret });
    expect(reg.status).toBe(201);
    const runId = await run(a);
    const ours = () => rx.on('/flaky').filter((h) => h.body?.runId === runId);
    await rx.waitFor(() => ours().filter((h) => h.status === 204).length >= 2);
    const byEvent = new Map<string, Hit[]>();
    for (const h of ours()) byEvent.set(h.body.event.type, [...(byEvent.get(h.body.event.type) ?? []), h]);
    expect([...byEvent.keys()].sort()).toEqual(['run.completed', 'run.started']);
    const ids = [...byEvent.values()].map((attempts) => {
      expect(attempts.length).toBeGreaterThanOrEqual(2);
      expect(new Set(attempts.map((h) => h.headers['webhook-id'])).size).toBe(1);
      return String(attempts[0].headers['webhook-id']);
    });
    expect(new Set(ids).size).toBe(2);
    for (const h of ours()) {
      const id = String(h.headers['webhook-id']);
      expect(id).toMatch(/^[A-Za-z0-9_-]{16,128}$/);
      expect(id).not.toBe(reg.body.webhookId);
      expect(h.headers['webhook-timestamp']).toBe(h.headers['openwop-timestamp']);
      expect(h.headers['openwop-signature-algorithm']).toBe('v1');
      expect(v1Verifies(h, secret)).toBe(true);
      expect(standardMatches(h, secret)).toEqual({ entries: 1, matched: 1 });
      // The signature covers the id: another id does not verify.
      expect(standardMatches({ ...h, headers: { ...h.headers, 'webhook-id': `${id}X` } }, secret).matched).toBe(0);
    }
    await t.http('DELETE', `/webhooks/${seg(reg.body.webhookId)}`, { token: a, headers: V2 });
  });

  it('rotates a secret: both sign during the overlap (OpenWOP-Signature on the previous one), then only the new one', async () => {
    const s1 = whsec();
    const s2 = whsec();
    const reg = await register(a, { url: `${rx.url}/echo-rot`, signatureAlgorithms: ['v1', 'standard-webhooks-1'], secret: s1 });
    expect(reg.status).toBe(201);
    const plain = await register(a, { url: `${rx.url}/plain-rot` });
    const notOpted = await t.http('POST', `/webhooks/${seg(plain.body.webhookId)}/rotate-secret`, { token: a, headers: V2, body: { secret: s2 } });
    expect({ status: notOpted.status, error: notOpted.body.error }).toEqual({ status: 400, error: 'validation_error' });
    const foreign = await t.http('POST', `/webhooks/${seg(`tenant-b/${reg.body.webhookId.split('/')[1]}`)}/rotate-secret`, { token: a, headers: V2, body: { secret: s2 } });
    expect({ status: foreign.status, error: foreign.body.error }).toEqual({ status: 403, error: 'id_tenant_mismatch' });
    const other = await t.http('POST', `/webhooks/${seg(reg.body.webhookId.replace('tenant-a', 'tenant-b'))}/rotate-secret`, { token: b, headers: V2, body: { secret: s2 } });
    expect({ status: other.status, error: other.body.error }).toEqual({ status: 404, error: 'not_found' });
    const bad = await t.http('POST', `/webhooks/${seg(reg.body.webhookId)}/rotate-secret`, { token: a, headers: V2, body: { secret: 'not-a-whsec-secret' } });
    expect(bad.status).toBe(400);

    const rot = await t.http('POST', `/webhooks/${seg(reg.body.webhookId)}/rotate-secret`, { token: a, headers: V2, body: { secret: s2 } });
    expect(rot.status).toBe(200);
    expect(rot.body.webhookId).toBe(reg.body.webhookId);
    expect(Date.parse(rot.body.previousSecretExpiresAt) - Date.parse(rot.body.rotatedAt)).toBe(120_000);
    expect(rot.text).not.toContain(s2.slice(6));

    const during = await run(a);
    await rx.waitFor(() => rx.on('/echo-rot').some((h) => h.body.runId === during));
    const d = rx.on('/echo-rot').find((h) => h.body.runId === during)!;
    expect(standardMatches(d, s2)).toEqual({ entries: 2, matched: 1 });
    expect(standardMatches(d, s1)).toEqual({ entries: 2, matched: 1 });
    expect(v1Verifies(d, s1)).toBe(true);

    // The overlap ends (moved to the past here rather than waited for): the new secret alone signs.
    await t.ds.query(`UPDATE "webhook_subscription" SET "previous_secret_expires_at" = now() - interval '1 second' WHERE "id" = $1`, [reg.body.webhookId.split('/')[1]]);
    const after = await run(a);
    await rx.waitFor(() => rx.on('/echo-rot').some((h) => h.body.runId === after));
    const e = rx.on('/echo-rot').find((h) => h.body.runId === after)!;
    expect(standardMatches(e, s2)).toEqual({ entries: 1, matched: 1 });
    expect(standardMatches(e, s1).matched).toBe(0);
    expect(v1Verifies(e, s2)).toBe(true);
    // The hourly sweep then forgets the previous secret's sealed value.
    const [before] = await t.ds.query(`SELECT "previous_secret_ref" AS ref FROM "webhook_subscription" WHERE "id" = $1`, [reg.body.webhookId.split('/')[1]]);
    expect(await t.app.get(WebhooksService).retireRotatedSecrets()).toBeGreaterThanOrEqual(1);
    const [row] = await t.ds.query(`SELECT "previous_secret_ref" AS ref, "previous_secret_expires_at" AS exp FROM "webhook_subscription" WHERE "id" = $1`, [reg.body.webhookId.split('/')[1]]);
    expect(row).toEqual({ ref: null, exp: null });
    expect(await t.ds.query(`SELECT 1 FROM "credential" WHERE "id" = $1`, [before.ref])).toEqual([]);
    for (const id of [reg.body.webhookId, plain.body.webhookId]) await t.http('DELETE', `/webhooks/${seg(id)}`, { token: a, headers: V2 });
  });

  it('dead-letters an exhausted delivery (no body, headers or secret in the record); after unregister the read is 404 not_found', async () => {
    const reg = await register(a, { url: `${rx.url}/fail` });
    const id = reg.body.webhookId as string;
    const runId = await run(a);
    await rx.waitFor(() => rx.on('/fail').filter((h) => h.body.runId === runId).length >= 3);
    let letters: any[] = []; // eslint-disable-line @typescript-eslint/no-explicit-any
    const until = Date.now() + 15_000;
    while (!letters.length && Date.now() < until) {
      const r = await t.http('GET', `/webhooks/${seg(id)}/dead-letters`, { token: a, headers: V2 });
      expect(r.status).toBe(200);
      letters = r.body.deliveries;
      if (!letters.length) await new Promise((res) => setTimeout(res, 50));
    }
    expect(letters).toHaveLength(1);
    const [l] = letters;
    expect(l).toMatchObject({ webhookId: id, runId, eventType: 'run.completed', attempts: 3, lastStatusCode: 500 });
    expect(l.deliveryId).toMatch(/^tenant-a\/[0-9a-f-]{36}$/);
    expect(Date.parse(l.expiresAt) - Date.parse(l.deadLetteredAt)).toBe(30 * 86_400_000);
    expect(Object.keys(l).filter((k) => ['body', 'headers', 'secret', 'payload'].includes(k))).toEqual([]);
    // No further attempt after the last one.
    await new Promise((res) => setTimeout(res, 500));
    expect(rx.on('/fail').filter((h) => h.body.runId === runId)).toHaveLength(3);

    expect((await t.http('DELETE', `/webhooks/${encodeURIComponent(id)}`, { token: a, headers: V2 })).status).toBe(204);
    const gone = await t.http('GET', `/webhooks/${seg(id)}/dead-letters`, { token: a, headers: V2 });
    const never = await t.http('GET', `/webhooks/${seg('tenant-a/wh-000000000000000000000000')}/dead-letters`, { token: a, headers: V2 });
    expect([gone.status, gone.body.error]).toEqual([404, 'not_found']);
    expect([never.status, never.body.error]).toEqual([404, 'not_found']);
  });

  it('keeps a major-1 subscription on the v1 delivery beside a major-2 one', async () => {
    const v1 = await t.http('POST', '/v1/webhooks', { token: a, body: { url: `${rx.url}/v1`, events: ['run.completed'] } });
    expect(v1.status).toBe(201);
    expect(v1.body.webhookId).toMatch(/^wh_[0-9a-f]{24}$/);
    const runId = await run(a);
    const opaque = runId.split('/')[1];
    await rx.waitFor(() => rx.on('/v1').some((h) => h.body.runId === opaque));
    const d = rx.on('/v1').find((h) => h.body.runId === opaque)!;
    expect(Object.keys(d.headers).filter((k) => k.startsWith('openwop-') || k.startsWith('webhook-'))).toEqual([]);
    expect(Object.keys(d.headers).filter((k) => k.startsWith('x-openwop-')).sort()).toEqual(
      ['x-openwop-delivery-id', 'x-openwop-event-type', 'x-openwop-signature', 'x-openwop-signature-algorithm', 'x-openwop-timestamp', 'x-openwop-webhook-id'],
    );
    expect(d.body).toMatchObject({ runId: opaque, tenantId: 'tenant-a', workspaceId: 'tenant-a', event: { runId: opaque, type: 'run.completed' } });
    expect(d.body.event.schemaVersion).toBeUndefined();
    expect(v1Verifies(d, v1.body.secret, 'x-openwop')).toBe(true);
    await t.http('DELETE', `/v1/webhooks/${v1.body.webhookId}`, { token: a });
  });

  it('the receive seam runs the host verifier: an X-openwop-only v1 delivery is accepted, a tampered one refused', async () => {
    const secret = 'seam-secret';
    const body = JSON.stringify({ runId: 'r', event: { type: 'run.completed', sequence: 3 } });
    const ts = Math.floor(Date.now() / 1000);
    const sig = createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex');
    const headers = { 'X-openwop-Timestamp': String(ts), 'X-openwop-Signature': `sha256=${sig}`, 'X-openwop-Signature-Algorithm': 'v1' };
    const post = (h: Record<string, string>, b = body) => t.http('POST', '/conformance/seams/sample/webhooks/receive', { token: a, headers: V2, body: { secret, headers: h, body: b } });
    expect((await post(headers)).body).toEqual({ accepted: true });
    expect((await post(headers, body.replace('3', '4'))).body).toEqual({ accepted: false, reason: 'signature_mismatch' });
    expect((await post({ ...headers, 'X-openwop-Signature-Algorithm': 'v2' })).body).toEqual({ accepted: false, reason: 'unknown_signature_algorithm' });
    const stale = createHmac('sha256', secret).update(`${ts - 600}.${body}`).digest('hex');
    expect((await post({ ...headers, 'X-openwop-Timestamp': String(ts - 600), 'X-openwop-Signature': `sha256=${stale}` })).body).toEqual({ accepted: false, reason: 'timestamp_out_of_tolerance' });
  });
});
