/**
 * Fair scheduling between tenants (docs/operations.md §Fair scheduling), on the test database and on
 * an embedded engine of the host's own: one tenant floods the engine with queued runs, another
 * tenant's single run starts ahead of that backlog, not behind it; with
 * OPENWOP_TENANT_MAX_ACTIVE_RUNS the flooding tenant never executes more runs at once than its cap.
 * Every check reads what the runs recorded (start and finish times, the order of starts), never a
 * wall-clock budget, so a loaded machine slows the test down but does not change its verdicts.
 */
import { HostProcess, startHostProcess } from '../support/host-process';
import { createTestApp, TestApp } from '../support/test-app';
import { RUNS_CHANNEL } from '../../src/platform/database/database-notifications';
import { installChains, noopChain } from './run-kit';

const CHAINS = { 'vendor.test.fair': noopChain(3) };
/** The flood's runs under a cap take a moment each (a run between its first and last write), so runs executing at once overlap measurably. */
const SLOW = { nodes: [{ id: 'a', typeId: 'core.noop', config: {} }, { id: 'wait', typeId: 'core.delay', config: { ms: 50 } }, { id: 'b', typeId: 'core.noop', config: {} }], edges: [{ from: 'a', to: 'wait' }, { from: 'wait', to: 'b' }] };
const SCOPES = ['runs:create', 'runs:read'];
const FLOOD = 'flood-tenant';
const BACKLOG = 3000;

interface Target {
  http(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any
  query<T>(sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

async function onTestDatabase(env: Record<string, string>): Promise<Target> {
  const t: TestApp = await createTestApp({ env });
  const key = await t.key({ scopes: SCOPES });
  await installChains(t, 'default', 'vendor.test.fair', CHAINS);
  return { http: (m, u, b) => t.http(m, u, { token: key, body: b }), query: async (s, p) => t.ds.query(s, p), close: () => t.close() };
}

async function onEmbeddedEngine(env: Record<string, string>): Promise<Target> {
  const h: HostProcess = await startHostProcess({ env, scopes: SCOPES, chains: { tenant: 'default', name: 'vendor.test.fair', chains: CHAINS } });
  return { http: (m, u, b) => h.http(m, u, { body: b }), query: (s, p) => h.query(s, p), close: () => h.close() };
}

/** Queues `n` runs of the flooding tenant in one statement (as many clients would have), all older than anything created later. */
async function flood(t: Target, n: number, definition: Record<string, unknown> = noopChain(3)): Promise<void> {
  await t.query(
    `INSERT INTO "run" ("tenant", "principal", "kind", "status", "metadata", "workflow_id", "definition_key", "inputs", "configurable", "principal_key", "created_at")
     SELECT $1, 'flooder', 'workflow', 'pending', '{}'::jsonb, 'vendor.test.fair', run_definition_ref($1, $2::jsonb), '{}'::jsonb, '{}'::jsonb, run_principal_ref($1, NULL, '{}'::text[]), now() - interval '1 hour' + i * interval '1 millisecond'
     FROM generate_series(1, $3::int) AS i`,
    [FLOOD, JSON.stringify(definition), n],
  );
  await t.query(`SELECT pg_notify('${RUNS_CHANNEL}', '')`);
}

async function waitTerminal(t: Target, where: string, params: unknown[], want: number, timeoutMs: number): Promise<number> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [{ n }] = await t.query<{ n: number }>(`SELECT count(*)::int AS n FROM "run" WHERE ${where} AND "status" IN ('completed', 'failed', 'cancelled')`, params);
    if (n >= want || Date.now() > until) return n;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The tenant's runs holding a lease now (claimed, executing). */
async function leased(t: Target, tenant: string): Promise<number> {
  const [{ n }] = await t.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM "run" WHERE "tenant" = $1 AND "status" IN ('pending', 'running', 'cancelling') AND "lease_owner" IS NOT NULL AND "lease_expires_at" > now()`,
    [tenant],
  );
  return n;
}

/** The most runs of the tenant finished by one write (runs finished in one statement were executing together). */
async function mostFinishedTogether(t: Target, tenant: string): Promise<number> {
  const [{ n }] = await t.query<{ n: number }>(`SELECT coalesce(max(c), 0)::int AS n FROM (SELECT count(*) AS c FROM "run" WHERE "tenant" = $1 GROUP BY "completed_at") g`, [tenant]);
  return n;
}

describe.each([
  ['the test database', onTestDatabase],
  ['an embedded engine of its own', onEmbeddedEngine],
])('runs: fair scheduling between tenants on %s', (_label, start) => {
  let t: Target | undefined;

  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it(`starts another tenant's single run ahead of a ${BACKLOG}-run backlog queued before it`, async () => {
    t = await start({ OPENWOP_SCHEDULER_ENABLED: 'true', OPENWOP_RATE_LIMIT_ENABLED: 'false', OPENWOP_FAIR_CLAIMS: 'true' });
    await flood(t, BACKLOG);
    // The backlog is being worked off: the other tenant's run arrives behind all of it.
    expect(await waitTerminal(t, `"tenant" = $1`, [FLOOD], 1, 120_000)).toBeGreaterThan(0);
    const created = await t.http('POST', '/v1/runs', { workflowId: 'vendor.test.fair' });
    expect(created.status).toBe(201);
    const runId = created.body.runId as string;
    expect(await waitTerminal(t, `"id" = $1`, [runId], 1, 120_000)).toBe(1);
    // How many of the flood's runs started before it: without fairness all 3,000 (they are older); with it,
    // those running or claimed when it arrived and a claim's worth more at most.
    const [{ before, total }] = await t.query<{ before: number; total: number }>(
      `SELECT count(*) FILTER (WHERE f."started_at" < o."started_at")::int AS before, count(*)::int AS total
       FROM "run" f, (SELECT "started_at" FROM "run" WHERE "id" = $2) o WHERE f."tenant" = $1`,
      [FLOOD, runId],
    );
    expect(total).toBe(BACKLOG);
    expect(before).toBeLessThan(BACKLOG / 3);
  }, 300_000);

  it('keeps the flooding tenant at OPENWOP_TENANT_MAX_ACTIVE_RUNS while the other tenant runs', async () => {
    t = await start({ OPENWOP_SCHEDULER_ENABLED: 'true', OPENWOP_RATE_LIMIT_ENABLED: 'false', OPENWOP_TENANT_MAX_ACTIVE_RUNS: '2' });
    await flood(t, 200, SLOW);
    const created = await Promise.all(Array.from({ length: 4 }, () => t!.http('POST', '/v1/runs', { workflowId: 'vendor.test.fair' })));
    expect(created.map((c) => c.status)).toEqual([201, 201, 201, 201]);
    // Samples of the flood's leased runs while it is worked off (each at most the cap; some seen at all).
    const samples: number[] = [];
    const until = Date.now() + 240_000;
    for (;;) {
      samples.push(await leased(t, FLOOD));
      const [{ n }] = await t.query<{ n: number }>(`SELECT count(*)::int AS n FROM "run" WHERE "tenant" = $1 AND "status" = 'completed'`, [FLOOD]);
      if (n === 200 || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await waitTerminal(t, `"tenant" = $1`, [FLOOD], 200, 1000)).toBe(200);
    expect(await waitTerminal(t, `"id" = ANY($1::uuid[])`, [created.map((c) => c.body.runId)], 4, 120_000)).toBe(4);
    // Without the cap the engine's 64 slots would run dozens of them at once.
    expect(Math.max(...samples)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...samples)).toBeLessThanOrEqual(2);
    expect(await mostFinishedTogether(t, FLOOD)).toBeLessThanOrEqual(2);
  }, 300_000);
});
