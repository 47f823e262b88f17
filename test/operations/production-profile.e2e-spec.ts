/**
 * The production profile's backpressure and retention claims (spec v1 production-profile.md), on the
 * test database and on an embedded engine of the host's own: with OPENWOP_RUN_INFLIGHT_CAP a tenant
 * holding that many queued or executing runs gets `503 service_unavailable` for one more, with
 * `Retry-After` equal to `details.retryAfter` and nothing written; a keyed replay of a run already
 * created still answers it; another tenant, discovery and runs waiting on a person are not held back;
 * the cap frees as runs end. Discovery advertises what the host does (`production.backpressure`,
 * `production.retention.minWindowSeconds` from OPENWOP_RUN_RETENTION_DAYS), and a run's end is
 * logged with its id, tenant, status and error code.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { HostProcess, startHostProcess } from '../support/host-process';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Target {
  http(method: string, url: string, opts?: { token?: string; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; header(name: string): string | undefined; body: Json }>;
  /** A key of another tenant with the same scopes (the in-process host mints one; the embedded process has only its own key). */
  otherTenantKey?(): Promise<string>;
  query<T = Json>(sql: string, params?: unknown[]): Promise<T[]>;
  logs(): string[];
  close(): Promise<void>;
}

const CAP = 2;
const ENV = { OPENWOP_TEST_SEAMS: 'true', OPENWOP_RUN_INFLIGHT_CAP: String(CAP), OPENWOP_BACKPRESSURE_RETRY_AFTER_SECONDS: '7', OPENWOP_RUN_RETENTION_DAYS: '9', OPENWOP_RATE_LIMIT_ENABLED: 'false' };
const SCOPES = ['runs:create', 'runs:read', 'runs:cancel', 'approvals:respond'];

async function onTestDatabase(): Promise<Target> {
  const t: TestApp = await createTestApp({ env: ENV });
  const key = await t.key({ scopes: SCOPES });
  return {
    http: async (method, url, opts = {}) => {
      const r = await t.http(method, url, { token: opts.token ?? key, body: opts.body, headers: opts.headers });
      return { status: r.status, header: (n) => r.headers[n.toLowerCase()] as string | undefined, body: r.body as Json };
    },
    otherTenantKey: () => t.key({ tenant: 'production-other', scopes: SCOPES }),
    query: (sql, params) => t.ds.query(sql, params),
    logs: () => t.logs,
    close: () => t.close(),
  };
}

async function onEmbeddedEngine(): Promise<Target> {
  const h: HostProcess = await startHostProcess({ env: ENV, scopes: SCOPES });
  return {
    http: async (method, url, opts = {}) => {
      const r = await h.http(method, url, { body: opts.body, headers: opts.headers, token: opts.token });
      return { status: r.status, header: (n) => r.headers.get(n) ?? undefined, body: r.body as Json };
    },
    query: (sql, params) => h.query(sql, params),
    logs: () => h.logs,
    close: () => h.close(),
  };
}

async function waitStatus(t: Target, runId: string, want: (s: string) => boolean, timeoutMs = 30_000, token?: string): Promise<string> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await t.http('GET', `/v1/runs/${runId}`, { token });
    if (want(r.body.status) || Date.now() > until) return r.body.status as string;
    await new Promise((res) => setTimeout(res, 100));
  }
}

describe.each([
  ['the test database', onTestDatabase],
  ['an embedded engine of its own', onEmbeddedEngine],
])('production profile on %s', (_label, start) => {
  let t: Target;

  beforeAll(async () => {
    t = await start();
  }, 180_000);

  afterAll(async () => {
    await t?.close();
  });

  it('advertises backpressure with the cap and its Retry-After, and retention from the configured window', async () => {
    const d = await t.http('GET', '/.well-known/openwop', { token: '' });
    expect(d.status).toBe(200);
    expect(d.body.production).toEqual({
      supported: true,
      backpressure: { supported: true, inflightCap: CAP, retryAfterSeconds: 7 },
      retention: { supported: true, minWindowSeconds: 9 * 86_400 },
    });
    // The deprecated wrapper mirrors it (the profile's scenarios read it there).
    expect(d.body.capabilities.production).toEqual(d.body.production);
  });

  it('refuses a run past the cap with 503, Retry-After = details.retryAfter, and writes nothing; keyed replays, other tenants and discovery go on', async () => {
    const holders: string[] = [];
    for (let i = 0; i < CAP; i++) {
      const c = await t.http('POST', '/v1/runs', { body: { workflowId: 'conformance-delay', inputs: { delayMs: 60_000 } }, headers: { 'Idempotency-Key': `hold-${i}` } });
      expect(c.status).toBe(201);
      holders.push(c.body.runId as string);
    }
    const before = (await t.query<{ n: number }>(`SELECT count(*)::int AS "n" FROM "run"`))[0].n;
    const refused = await t.http('POST', '/v1/runs', { body: { workflowId: 'conformance-noop' } });
    expect(refused.status).toBe(503);
    expect(refused.header('retry-after')).toBe('7');
    expect(refused.body).toEqual({ error: 'service_unavailable', message: expect.stringContaining('capacity'), details: expect.objectContaining({ retryAfter: 7, inflightCap: CAP }) });
    expect((await t.query<{ n: number }>(`SELECT count(*)::int AS "n" FROM "run"`))[0].n).toBe(before);

    // The same key and body as a run already created: answered again, not refused.
    const replay = await t.http('POST', '/v1/runs', { body: { workflowId: 'conformance-delay', inputs: { delayMs: 60_000 } }, headers: { 'Idempotency-Key': 'hold-0' } });
    expect(replay.status).toBeLessThan(300);
    expect(replay.body.runId).toBe(holders[0]);

    // Another tenant has its own budget; discovery answers under saturation.
    if (t.otherTenantKey) {
      const theirs = await t.http('POST', '/v1/runs', { token: await t.otherTenantKey(), body: { workflowId: 'conformance-noop' } });
      expect(theirs.status).toBe(201);
    }
    expect((await t.http('GET', '/.well-known/openwop', { token: '' })).status).toBe(200);

    // A slot frees when a run ends.
    expect((await t.http('POST', `/v1/runs/${holders[0]}/cancel`, { body: { reason: 'free a slot' } })).status).toBeLessThan(300);
    expect(await waitStatus(t, holders[0], (s) => s === 'cancelled')).toBe('cancelled');
    const admitted = await t.http('POST', '/v1/runs', { body: { workflowId: 'conformance-noop' } });
    expect(admitted.status).toBe(201);
    expect(await waitStatus(t, admitted.body.runId as string, (s) => s === 'completed')).toBe('completed');
    await t.http('POST', `/v1/runs/${holders[1]}/cancel`, { body: { reason: 'done' } });
    expect(await waitStatus(t, holders[1], (s) => s === 'cancelled')).toBe('cancelled');
  }, 120_000);

  it('does not count runs waiting on a person', async () => {
    const waiting: string[] = [];
    for (let i = 0; i < CAP + 1; i++) {
      const c = await t.http('POST', '/v1/runs', { body: { workflowId: 'conformance-approval' } });
      expect(c.status).toBe(201);
      expect(await waitStatus(t, c.body.runId as string, (s) => s === 'waiting-approval')).toBe('waiting-approval');
      waiting.push(c.body.runId as string);
    }
    const next = await t.http('POST', '/v1/runs', { body: { workflowId: 'conformance-noop' } });
    expect(next.status).toBe(201);
    for (const id of waiting) await t.http('POST', `/v1/runs/${id}/cancel`, { body: { reason: 'done' } });
  }, 120_000);

  it('logs the end of a run with its id, tenant, status and error code', async () => {
    const c = await t.http('POST', '/v1/runs', { body: { workflowId: 'conformance-failure' } });
    expect(c.status).toBe(201);
    const runId = c.body.runId as string;
    expect(await waitStatus(t, runId, (s) => s === 'failed')).toBe('failed');
    const until = Date.now() + 5000;
    let line: Json | undefined;
    while (!line && Date.now() < until) {
      line = t
        .logs()
        .filter((l) => l.includes('"run ended"') && l.includes(runId))
        .map((l) => JSON.parse(l.slice(l.indexOf('{'))) as Json)[0];
      if (!line) await new Promise((r) => setTimeout(r, 100));
    }
    expect(line).toEqual(expect.objectContaining({ msg: 'run ended', runId, tenant: 'default', status: 'failed', errorCode: expect.any(String) }));
  });
});
