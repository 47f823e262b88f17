import { EventLogService } from '../../src/platform/events/event-log.service';
import { MetricsService } from '../../src/platform/metrics/metrics.service';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { FakeWorker, goalBody, instrument, ManualClock } from '../goals/goal-test-kit';
import { createTestApp, TestApp } from '../support/test-app';
import { parsePrometheusText, Sample, valueOf } from './prometheus-text';

const envelopeOk = (body: unknown) => expect(SchemaRegistry.shared().validate('error-envelope', body)).toEqual([]);

describe('GET /metrics (OPENWOP_METRICS=scope, the default)', () => {
  let t: TestApp;
  let monitor: string;
  let reader: string;

  beforeAll(async () => {
    t = await createTestApp();
    monitor = await t.key({ principal: 'prometheus', roles: ['monitor'] });
    reader = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['goals:read', 'goals:write', 'runs:create'] });
  });
  afterAll(() => t.close());

  const scrape = async (): Promise<Sample[]> => {
    const res = await t.http('GET', '/metrics', { token: monitor });
    expect(res.status).toBe(200);
    expect(String(res.headers['content-type'])).toMatch(/^text\/plain; version=0\.0\.4/);
    return parsePrometheusText(res.text);
  };

  it('needs a credential (401) holding metrics:read (403); tenant admins do not hold it', async () => {
    const anonymous = await t.http('GET', '/metrics');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error).toBe('unauthenticated');
    envelopeOk(anonymous.body);
    const admin = await t.key({ roles: ['admin'] });
    for (const token of [reader, admin]) {
      const res = await t.http('GET', '/metrics', { token });
      expect(res.status).toBe(403);
      expect(res.body).toEqual(expect.objectContaining({ error: 'forbidden', details: expect.objectContaining({ requiredScopes: ['metrics:read'] }) }));
      envelopeOk(res.body);
    }
  });

  it('answers the Prometheus text format, with the pool gauges and every host family declared', async () => {
    const samples = await scrape();
    for (const state of ['total', 'idle', 'waiting']) {
      expect(samples.some((s) => s.name === 'openwop_db_pool_connections' && s.labels.state === state)).toBe(true);
    }
    expect(valueOf(samples, 'openwop_db_pool_connections', { state: 'total' })).toBeGreaterThanOrEqual(1);
    const names = new Set(samples.map((s) => s.name));
    for (const n of ['openwop_process_cpu_user_seconds_total', 'openwop_goal_iterations_finished_total']) expect(names).toContain(n);
  });

  it('counts requests per route pattern and status (never the raw URL) with a latency histogram', async () => {
    const before = await scrape();
    const created = await t.http('POST', '/v1/goals', { token: reader, body: goalBody({ continuation: { mode: 'manual' }, schedule: undefined }) });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await t.http('GET', `/v1/goals/${id}`, { token: reader });
    await t.http('GET', `/v1/goals/${id}`, { token: reader });
    await t.http('GET', '/v1/goals/00000000-0000-4000-8000-000000000000', { token: reader });
    await t.http('GET', '/v1/no-such-route/12345', { token: reader });
    const after = await scrape();
    const get = { method: 'GET', route: '/v1/goals/:id' };
    expect(valueOf(after, 'openwop_http_requests_total', { ...get, status: '200' }) - valueOf(before, 'openwop_http_requests_total', { ...get, status: '200' })).toBe(2);
    expect(valueOf(after, 'openwop_http_requests_total', { ...get, status: '404' }) - valueOf(before, 'openwop_http_requests_total', { ...get, status: '404' })).toBe(1);
    expect(valueOf(after, 'openwop_http_requests_total', { method: 'POST', route: '/v1/goals', status: '201' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(after, 'openwop_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(after, 'openwop_http_request_duration_seconds_count', { ...get, status: '200' }) - valueOf(before, 'openwop_http_request_duration_seconds_count', { ...get, status: '200' })).toBe(2);
    expect(valueOf(after, 'openwop_http_request_duration_seconds_bucket', { ...get, status: '200', le: '+Inf' })).toBe(
      valueOf(after, 'openwop_http_request_duration_seconds_count', { ...get, status: '200' }),
    );
    // The 401 and 403 of the access checks are counted too.
    expect(valueOf(after, 'openwop_http_requests_total', { method: 'GET', route: '/metrics', status: '401' })).toBeGreaterThanOrEqual(1);
    const routes = new Set(after.filter((s) => s.name === 'openwop_http_requests_total').map((s) => s.labels.route));
    expect([...routes].some((r) => r.includes(id) || r.includes('12345'))).toBe(false);
  });

  it('times event-log appends', async () => {
    const before = valueOf(await scrape(), 'openwop_event_log_append_duration_seconds_count');
    await t.app.get(EventLogService).append({ tenant: 'acme' }, 'host', 'test.metrics', {});
    await t.app.get(EventLogService).append({ tenant: 'acme' }, 'host', 'test.metrics', {});
    const after = await scrape();
    expect(valueOf(after, 'openwop_event_log_append_duration_seconds_count') - before).toBe(2);
    expect(valueOf(after, 'openwop_event_log_append_duration_seconds_sum')).toBeGreaterThan(0);
  });

  it('reports the goal scheduler: claimed iterations, how they finished, and how late they were claimed', async () => {
    const clock = new ManualClock(Date.now());
    const worker = new FakeWorker(() => ({ output: { green: false } }));
    const { tick } = instrument(t, clock, worker);
    const before = await scrape();
    const g = await t.http('POST', '/v1/goals', { token: reader, body: goalBody() });
    expect(g.status).toBe(201);
    clock.advance(3000);
    const pass = await tick();
    expect(pass.claimed).toBe(1);
    const after = await scrape();
    expect(valueOf(after, 'openwop_goal_iterations_claimed_total') - valueOf(before, 'openwop_goal_iterations_claimed_total')).toBe(1);
    const delta = (outcome: string) =>
      valueOf(after, 'openwop_goal_iterations_finished_total', { outcome }) - valueOf(before, 'openwop_goal_iterations_finished_total', { outcome });
    expect(delta('dispatched')).toBe(pass.dispatched);
    expect(delta('recorded')).toBe(pass.recorded);
    expect(delta('dispatched')).toBe(1);
    expect(valueOf(after, 'openwop_goal_scheduler_lag_seconds_count') - valueOf(before, 'openwop_goal_scheduler_lag_seconds_count')).toBe(1);
    // Due at most 1 s after creation and claimed 3 s after it: between 2 and 3 s late.
    expect(valueOf(after, 'openwop_goal_scheduler_lag_seconds_bucket', { le: '1' })).toBe(valueOf(before, 'openwop_goal_scheduler_lag_seconds_bucket', { le: '1' }));
    expect(valueOf(after, 'openwop_goal_scheduler_lag_seconds_bucket', { le: '5' }) - valueOf(before, 'openwop_goal_scheduler_lag_seconds_bucket', { le: '5' })).toBe(1);
    await t.http('POST', `/v1/goals/${g.body.id}/abandon`, { token: reader });
  });

  it('lets a capability register its own collectors (computed at scrape time), and refuses clashes', async () => {
    const metrics = t.app.get(MetricsService);
    let calls = 0;
    metrics.gauge({
      name: 'openwop_test_things',
      help: 'Things by status, computed when scraped.',
      labelNames: ['status'],
      async collect() {
        calls++;
        const [{ n }] = (await t.ds.query(`SELECT 3 AS n`)) as Array<{ n: number }>;
        this.set({ status: 'ready' }, Number(n));
      },
    });
    const samples = await scrape();
    expect(calls).toBe(1);
    expect(valueOf(samples, 'openwop_test_things', { status: 'ready' })).toBe(3);
    expect(() => metrics.counter({ name: 'openwop_test_things', help: 'again' })).toThrow();
    expect(() => metrics.counter({ name: 'things_total', help: 'no prefix' })).toThrow(/openwop_/);
  });
});

describe('GET /metrics access modes', () => {
  it('public: no credential needed', async () => {
    const t = await createTestApp({ env: { OPENWOP_METRICS: 'public' } });
    try {
      const res = await t.http('GET', '/metrics');
      expect(res.status).toBe(200);
      expect(parsePrometheusText(res.text).length).toBeGreaterThan(0);
    } finally {
      await t.close();
    }
  });

  it('off: not served at all (404 not_found, even for a credential holding metrics:read)', async () => {
    const t = await createTestApp({ env: { OPENWOP_METRICS: 'off' } });
    try {
      const monitor = await t.key({ roles: ['monitor'] });
      for (const token of [undefined, monitor]) {
        const res = await t.http('GET', '/metrics', { token });
        expect(res.status).toBe(404);
        expect(res.body.error).toBe('not_found');
        envelopeOk(res.body);
      }
    } finally {
      await t.close();
    }
  });

  it('refuses an unknown mode at start', async () => {
    await expect(createTestApp({ env: { OPENWOP_METRICS: 'open' } })).rejects.toThrow(/OPENWOP_METRICS must be public, scope or off/);
  });
});
