/**
 * Database faults on a server, against a PostgreSQL cluster this test starts for itself (never the
 * shared test server): stopped for 10 s under a write load, every request that needs it answers
 * 503 `service_unavailable` with Retry-After (never 500), no acknowledged write is lost and /readyz
 * is ok again within 30 s; frozen (SIGSTOP) for 20 s, no request waits longer than the statement
 * timeout + 1 s, and /readyz always answers within 2 s.
 */
import { installChains, noopChain } from '../runs/run-kit';
import { PrivatePostgres, startPrivatePostgres } from '../support/private-postgres';
import { createTestApp, TestApp } from '../support/test-app';

const STATEMENT_TIMEOUT_MS = 2000;

interface Answer {
  started: number;
  ms: number;
  status: number;
  error?: string;
  retryAfter?: string;
  runId?: string;
}

describe('database faults on a server: outage and hang', () => {
  let pg: PrivatePostgres;
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    pg = await startPrivatePostgres();
    t = await createTestApp({
      adminUrl: pg.url,
      env: {
        OPENWOP_SCHEDULER_ENABLED: 'true',
        OPENWOP_RATE_LIMIT_ENABLED: 'false',
        OPENWOP_DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
        OPENWOP_DB_CONNECT_TIMEOUT_MS: '500',
        OPENWOP_DB_LOCK_TIMEOUT_MS: '1000',
      },
      // Short leases: runs whose writes failed meanwhile resume soon after the database is back.
      configFile: { runs: { leaseMs: 6000, claimIntervalMs: 200 } },
    });
    key = await t.key({ scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'default', 'vendor.test.outage', { 'vendor.test.chain': noopChain(2) });
  }, 120_000);

  afterAll(async () => {
    await t?.close().catch(() => undefined);
    await pg?.destroy();
  });

  /** Writers posting runs (each with its own Idempotency-Key) until stopped; every answer recorded. */
  function writeLoad(writers: number) {
    const answers: Answer[] = [];
    let stop = false;
    let n = 0;
    const loops = Array.from({ length: writers }, async () => {
      while (!stop) {
        const started = Date.now();
        const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.chain', inputs: { n: n++ } }, headers: { 'idempotency-key': `w-${started}-${n}` } });
        answers.push({ started, ms: Date.now() - started, status: r.status, error: r.body?.error, retryAfter: r.headers['retry-after'] as string | undefined, runId: r.status === 201 ? r.body.runId : undefined });
        if (r.status !== 201) await new Promise((res) => setTimeout(res, 50));
      }
    });
    return {
      answers,
      async stop() {
        stop = true;
        await Promise.all(loops);
      },
    };
  }

  /** /readyz every 250 ms until stopped. */
  function probe() {
    const answers: Answer[] = [];
    let stop = false;
    const loop = (async () => {
      while (!stop) {
        const started = Date.now();
        const r = await t.http('GET', '/readyz');
        answers.push({ started, ms: Date.now() - started, status: r.status, error: r.body?.status });
        await new Promise((res) => setTimeout(res, 250));
      }
    })();
    return {
      answers,
      async stop() {
        stop = true;
        await loop;
      },
    };
  }

  async function readyWithin(ms: number): Promise<number> {
    const started = Date.now();
    for (;;) {
      const r = await t.http('GET', '/readyz');
      if (r.status === 200 && r.body.status === 'ok') return Date.now() - started;
      if (Date.now() - started > ms) throw new Error(`/readyz not ok after ${ms} ms: ${JSON.stringify(r.body)}`);
      await new Promise((res) => setTimeout(res, 250));
    }
  }

  async function allCompleted(ids: string[], ms: number): Promise<Record<string, number>> {
    const until = Date.now() + ms;
    for (;;) {
      const rows = (await t.ds.query(`SELECT "status", count(*)::int AS n FROM "run" WHERE "id" = ANY($1::uuid[]) GROUP BY 1`, [ids])) as Array<{ status: string; n: number }>;
      const by = Object.fromEntries(rows.map((r) => [r.status, r.n]));
      if (by.completed === ids.length || Date.now() > until) return by;
      await new Promise((res) => setTimeout(res, 250));
    }
  }

  it('stopped for 10 s under writes: 503 with Retry-After meanwhile, no acknowledged write lost, ready again within 30 s', async () => {
    expect((await t.http('GET', '/readyz')).body.status).toBe('ok');
    const load = writeLoad(4);
    const readiness = probe();
    await new Promise((r) => setTimeout(r, 1500));
    // The outage starts once the server is down: a busy machine takes a while to stop it.
    await pg.stop();
    const down = Date.now();
    await new Promise((r) => setTimeout(r, 10_000));
    await pg.start();
    const up = Date.now();
    const readyMs = await readyWithin(30_000);
    await new Promise((r) => setTimeout(r, 1500));
    await load.stop();
    await readiness.stop();

    const during = load.answers.filter((a) => a.started > down + 500 && a.started < up - 500);
    if (process.env.OPENWOP_TEST_REPORT) console.log(JSON.stringify({ outage: { answers: load.answers.length, during: during.length, acknowledged: load.answers.filter((a) => a.runId).length, slowestDuringMs: Math.max(...during.map((a) => a.ms)), readyAfterMs: readyMs, slowestReadyzMs: Math.max(...readiness.answers.map((a) => a.ms)) } }));
    expect(during.length).toBeGreaterThan(10);
    // Nothing but 201 or 503 service_unavailable with Retry-After, before, during and after.
    const kinds = new Set(load.answers.map((a) => (a.status === 201 ? '201' : `${a.status} ${a.error} retry-after=${a.retryAfter ?? 'none'}`)));
    expect([...kinds].sort()).toEqual(['201', '503 service_unavailable retry-after=5']);
    expect(during.every((a) => a.status === 503)).toBe(true);
    // Readiness said so, and answered in time, all along.
    expect(readiness.answers.filter((a) => a.started > down + 500 && a.started < up - 500).every((a) => a.status === 503 && a.error === 'unavailable')).toBe(true);
    expect(Math.max(...readiness.answers.map((a) => a.ms))).toBeLessThan(2000);
    expect(readyMs).toBeLessThan(30_000);

    // Every acknowledged run exists and completes (runs whose engine writes failed are resumed).
    const acknowledged = load.answers.filter((a) => a.runId).map((a) => a.runId!);
    expect(acknowledged.length).toBeGreaterThan(10);
    const [{ n }] = (await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "id" = ANY($1::uuid[])`, [acknowledged])) as Array<{ n: number }>;
    expect(n).toBe(acknowledged.length);
    expect(await allCompleted(acknowledged, 90_000)).toEqual({ completed: acknowledged.length });
    expect(t.logs.filter((l) => /"status":500/.test(l))).toEqual([]);
  }, 180_000);

  it('frozen for 20 s: no request waits longer than the statement timeout + 1 s, readiness answers within 2 s', async () => {
    const load = writeLoad(4);
    const readiness = probe();
    await new Promise((r) => setTimeout(r, 1000));
    const frozen = Date.now();
    pg.freeze(true);
    await new Promise((r) => setTimeout(r, 20_000));
    pg.freeze(false);
    const thawed = Date.now();
    const readyMs = await readyWithin(30_000);
    await new Promise((r) => setTimeout(r, 1000));
    await load.stop();
    await readiness.stop();

    const during = load.answers.filter((a) => a.started > frozen + 200 && a.started + a.ms < thawed);
    if (process.env.OPENWOP_TEST_REPORT) console.log(JSON.stringify({ hang: { answers: load.answers.length, during: during.length, slowestMs: Math.max(...load.answers.map((a) => a.ms)), readyAfterMs: readyMs, slowestReadyzMs: Math.max(...readiness.answers.map((a) => a.ms)) } }));
    expect(during.length).toBeGreaterThan(4);
    expect(during.every((a) => a.status === 503 && a.error === 'service_unavailable' && a.retryAfter === '5')).toBe(true);
    const slowest = Math.max(...load.answers.map((a) => a.ms));
    expect(slowest).toBeLessThanOrEqual(STATEMENT_TIMEOUT_MS + 1000);
    expect(Math.max(...readiness.answers.map((a) => a.ms))).toBeLessThan(2000);
    expect(readiness.answers.filter((a) => a.started > frozen + 200 && a.started + a.ms < thawed).every((a) => a.status === 503)).toBe(true);
    expect(readyMs).toBeLessThan(30_000);
    expect(load.answers.filter((a) => a.status !== 201 && a.status !== 503)).toEqual([]);
    const acknowledged = load.answers.filter((a) => a.runId).map((a) => a.runId!);
    expect(await allCompleted(acknowledged, 90_000)).toEqual({ completed: acknowledged.length });
  }, 180_000);
});
