/**
 * The newcomers' reserve of fair claims (docs/operations.md §Fair scheduling): on an engine whose
 * every slot holds one tenant's long runs, another tenant's first run is claimed at once into the
 * reserve, beside them, instead of waiting for one of them to finish; and it takes no slot of theirs.
 * Verdicts read what the runs recorded (the order of finishes and starts), never a wall-clock budget.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { RUNS_CHANNEL } from '../../src/platform/database/database-notifications';
import { installChains, noopChain } from './run-kit';

const SCOPES = ['runs:create', 'runs:read'];
const FLOOD = 'flood-tenant';
const CAPACITY = 8;
/** Each of the flood's runs holds its slot this long: far longer than a one-node run anywhere. */
const HOLD = { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 4000 } }], edges: [] };

async function waitFor(t: TestApp, sql: string, params: unknown[], want: number, timeoutMs: number): Promise<number> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [{ n }] = (await t.ds.query(sql, params)) as Array<{ n: number }>;
    if (n >= want || Date.now() > until) return n;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.each([
  ['on', 'true'],
  ['off', 'false'],
])('runs: fair claims %s, a tenant arriving at a saturated engine', (_label, fair) => {
  let t: TestApp | undefined;

  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it(fair === 'true' ? 'starts at once beside the busy tenant, in a slot of its own' : 'waits for a slot to free (the reserve is a part of fair claims)', async () => {
    t = await createTestApp({ env: { OPENWOP_SCHEDULER_ENABLED: 'true', OPENWOP_RATE_LIMIT_ENABLED: 'false', OPENWOP_FAIR_CLAIMS: fair }, configFile: { runs: { maxActiveRuns: CAPACITY } } });
    const key = await t.key({ scopes: SCOPES });
    await installChains(t, 'default', 'vendor.test.fair', { 'vendor.test.fair': noopChain(1) });
    await t.ds.query(
      `INSERT INTO "run" ("tenant", "principal", "kind", "status", "metadata", "workflow_id", "definition_key", "inputs", "configurable", "principal_key")
       SELECT $1, 'flooder', 'workflow', 'pending', '{}'::jsonb, 'vendor.test.hold', run_definition_ref($1, $2::jsonb), '{}'::jsonb, '{}'::jsonb, run_principal_ref($1, NULL, '{}'::text[]) FROM generate_series(1, $3::int)`,
      [FLOOD, JSON.stringify(HOLD), CAPACITY * 2],
    );
    await t.ds.query(`SELECT pg_notify('${RUNS_CHANNEL}', '')`);
    // Every slot holds one of the flood's runs (started: written once), and more of them wait.
    const started = `SELECT count(*)::int AS n FROM "run" WHERE "tenant" = $1 AND "started_at" IS NOT NULL`;
    expect(await waitFor(t, started, [FLOOD], CAPACITY, 60_000)).toBe(CAPACITY);

    const created = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.fair' } });
    expect(created.status).toBe(201);
    const runId = created.body.runId as string;
    expect(await waitFor(t, `SELECT count(*)::int AS n FROM "run" WHERE "id" = $1 AND "status" = 'completed'`, [runId], 1, 60_000)).toBe(1);
    await waitFor(t, `SELECT count(*)::int AS n FROM "run" WHERE "tenant" = $1 AND "status" = 'completed'`, [FLOOD], CAPACITY, 60_000);

    const [o] = (await t.ds.query(
      `SELECT count(*) FILTER (WHERE f."completed_at" <= q."completed_at")::int AS "finishedBefore",
              count(*) FILTER (WHERE f."started_at" <= q."completed_at")::int AS "startedBefore"
       FROM "run" f, (SELECT "completed_at" FROM "run" WHERE "id" = $2) q WHERE f."tenant" = $1`,
      [FLOOD, runId],
    )) as Array<{ finishedBefore: number; startedBefore: number }>;
    // On: it finished while the flood's first runs still held every slot, and none of the flood's
    // waiting runs started in a slot it took. Off: it had to wait for the first of them to finish.
    if (fair === 'true') {
      expect(o).toEqual({ finishedBefore: 0, startedBefore: CAPACITY });
    } else {
      expect(o.finishedBefore).toBeGreaterThanOrEqual(1);
    }
  }, 180_000);
});
