/**
 * The newcomers' reserve of fair claims, taken by a run's own insert and by a claim that names its run
 * (docs/operations.md §Fair scheduling): on replicas whose every slot holds one tenant's long runs,
 * another tenant's first run is claimed by the insert of its POST (a run of deterministic nodes
 * started before its insert, and a run of other nodes claimed by it), a tenant with a run executing
 * on another replica is not a newcomer and waits for a slot, and runs announced to two replicas at
 * once (each notification naming its run) are each claimed once, by id, never beyond the reserve.
 * Verdicts read what the runs and the database recorded (starts, finishes, fences, leases,
 * notifications), never a wall-clock budget.
 */
import { randomUUID } from 'node:crypto';
import type { PoolClient } from 'pg';
import { createTestApp, TestApp } from '../support/test-app';
import { RUNS_CHANNEL } from '../../src/platform/database/database-notifications';
import { insertPendingRun } from '../../src/capabilities/runs/engine/run-insert';
import { RunEngineService } from '../../src/capabilities/runs/engine/run-engine.service';
import { expectNoDoubleCompletion, installChains, noopChain } from './run-kit';

const SCOPES = ['runs:create', 'runs:read'];
const FLOOD = 'flood-tenant';
/** Each of the flood's runs holds its slot this long: far longer than a one-node run anywhere. */
const hold = (ms: number) => ({ 'vendor.test.hold': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms } }], edges: [] } });
/** A chain whose node is not deterministic: its run is not started before its insert, which only claims it. */
const ARTIFACT = { nodes: [{ id: 'note', typeId: 'core.artifact', config: { name: 'note', content: 'hello' } }], edges: [] };
const CLAIM_STATUSES = `"status" IN ('pending', 'running', 'cancelling')`;

async function waitFor(t: TestApp, sql: string, params: unknown[], want: number, timeoutMs: number): Promise<number> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [{ n }] = (await t.ds.query(sql, params)) as Array<{ n: number }>;
    if (n >= want || Date.now() > until) return n;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A connection listening on the runs channel: the payloads of the notifications it heard. */
async function listen(t: TestApp): Promise<{ heard: string[]; close(): Promise<void> }> {
  const pool = (t.ds.driver as unknown as { master: { connect(): Promise<PoolClient> } }).master;
  const client = await pool.connect();
  const heard: string[] = [];
  client.on('notification', (n) => n.channel === RUNS_CHANNEL && heard.push(n.payload ?? ''));
  await client.query(`LISTEN ${RUNS_CHANNEL}`);
  return {
    heard,
    async close() {
      await client.query(`UNLISTEN ${RUNS_CHANNEL}`);
      client.release();
    },
  };
}

/** The flood tenant posts `n` runs that hold their slots; answers once `started` of them run. */
async function flood(t: TestApp, token: string, n: number, started: number): Promise<void> {
  for (let i = 0; i < n; i++) expect((await t.http('POST', '/v1/runs', { token, body: { workflowId: 'vendor.test.hold' } })).status).toBe(201);
  const sql = `SELECT count(*)::int AS n FROM "run" WHERE "tenant" = $1 AND "started_at" IS NOT NULL`;
  expect(await waitFor(t, sql, [FLOOD], started, 60_000)).toBe(started);
}

interface RunTimes {
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  status: string;
  fence: number;
}

/**
 * Until replica `t` executes `n` runs at most. A run's final write commits before its execution ends
 * here and frees its slot, so a run read completed may still hold its slot of the reserve a moment.
 */
async function executingAtMost(t: TestApp, n: number, timeoutMs = 10_000): Promise<number> {
  const engine = t.app.get(RunEngineService);
  const until = Date.now() + timeoutMs;
  while (engine.activeCount() > n && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  return engine.activeCount();
}

async function times(t: TestApp, runId: string): Promise<RunTimes> {
  const [r] = (await t.ds.query(`SELECT "created_at", "started_at", "completed_at", "status", "fence" FROM "run" WHERE "id" = $1`, [runId])) as RunTimes[];
  return r;
}

async function floodFinishedBy(t: TestApp, at: Date): Promise<number> {
  const [{ n }] = (await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "tenant" = $1 AND "completed_at" <= $2`, [FLOOD, at])) as Array<{ n: number }>;
  return n;
}

describe("runs: fair claims, the newcomers' reserve taken by insert and by id", () => {
  const apps: TestApp[] = [];

  afterEach(async () => {
    for (const t of apps.splice(0).reverse()) await t.close();
  });

  it("a tenant's first run starts by its own insert on a saturated replica; a tenant with a run executing on another replica waits for a slot", async () => {
    const CAPACITY = 8;
    const env = { OPENWOP_RATE_LIMIT_ENABLED: 'false', OPENWOP_FAIR_CLAIMS: 'true' };
    // No periodic claim within the test: a newcomers' claim in flight holds the reserve's slot, so a run created
    // meanwhile is inserted unclaimed and announced (by design). The verdicts are about the insert's own claim;
    // every claim this test needs is woken by a notification or a freed slot.
    const a = await createTestApp({ env: { ...env, OPENWOP_SCHEDULER_ENABLED: 'true', OPENWOP_INSTANCE_ID: 'fair-a' }, configFile: { runs: { maxActiveRuns: CAPACITY, claimIntervalMs: 60_000 } } });
    apps.push(a);
    // A second replica that claims nothing on its own: it executes only the runs created on it.
    const b = await createTestApp({ env: { ...env, OPENWOP_SCHEDULER_ENABLED: 'false', OPENWOP_INSTANCE_ID: 'fair-b' }, database: a.databaseName });
    apps.push(b);
    await installChains(a, FLOOD, 'vendor.test.hold', hold(6000));
    for (const tenant of ['qa', 'qb', 'qc']) await installChains(a, tenant, 'vendor.test.quiet', { 'vendor.test.noop': noopChain(1), 'vendor.test.artifact': ARTIFACT, ...hold(6000) });
    const keyOf = async (tenant: string) => a.key({ tenant, scopes: SCOPES });
    const [floodKey, qa, qb, qc] = await Promise.all([keyOf(FLOOD), keyOf('qa'), keyOf('qb'), keyOf('qc')]);
    const notifications = await listen(a);
    try {
      // Every slot of replica a holds one of the flood's runs, and more of them wait.
      await flood(a, floodKey, CAPACITY * 2, CAPACITY);
      const post = async (t: TestApp, token: string, workflowId: string) => {
        const r = await t.http('POST', '/v1/runs', { token, body: { workflowId } });
        expect(r.status).toBe(201);
        return r.body.runId as string;
      };
      const completed = (runId: string) => waitFor(a, `SELECT count(*)::int AS n FROM "run" WHERE "id" = $1 AND "status" = 'completed'`, [runId], 1, 60_000);
      const heard = (runId: string) => notifications.heard.some((p) => p.startsWith(runId));

      // A run of deterministic nodes: started before its insert, which wrote it started (and, its one
      // node done at once, finished) in one statement, in the reserve beside the busy slots.
      const noop = await post(a, qa, 'vendor.test.noop');
      expect(await completed(noop)).toBe(1);
      const n = await times(a, noop);
      expect(n.started_at).toEqual(n.created_at);
      expect(n.completed_at).toEqual(n.created_at);
      expect(await floodFinishedBy(a, n.completed_at!)).toBe(0);
      // Its slot of the reserve is free again once its execution has ended here (the flood's runs hold theirs).
      expect(await executingAtMost(a, CAPACITY)).toBe(CAPACITY);

      // A run of another node: its insert claimed it (announcing nothing), its execution started it.
      const artifact = await post(a, qb, 'vendor.test.artifact');
      expect(await completed(artifact)).toBe(1);
      const r = await times(a, artifact);
      expect(r.fence).toBe(1);
      expect(await floodFinishedBy(a, r.completed_at!)).toBe(0);

      // qc executes a run on replica b: its run posted to the saturated replica a is no newcomer. It
      // is inserted unclaimed and announced, and waits for one of a's slots to free.
      const elsewhere = await post(b, qc, 'vendor.test.hold');
      expect(await waitFor(a, `SELECT count(*)::int AS n FROM "run" WHERE "id" = $1 AND "started_at" IS NOT NULL`, [elsewhere], 1, 60_000)).toBe(1);
      const waiting = await post(a, qc, 'vendor.test.noop');
      expect(await completed(waiting)).toBe(1);
      const w = await times(a, waiting);
      expect(w.started_at!.getTime()).toBeGreaterThan(w.created_at.getTime());
      expect(await floodFinishedBy(a, w.started_at!)).toBeGreaterThanOrEqual(1);
      await waitFor(a, `SELECT count(*)::int AS n FROM "run" WHERE "tenant" = $1 AND "status" = 'completed'`, [FLOOD], CAPACITY, 60_000);

      // What was announced: the runs left unclaimed (by name), never the two the reserve took by insert.
      // The embedded engine hands a notification only to the connection that sent it, so there no other
      // connection can witness the announcements; everything above holds on both engines.
      if (process.env.OPENWOP_TEST_DB_MODE !== 'embedded') {
        expect(heard(waiting)).toBe(true);
        expect(heard(noop)).toBe(false);
        expect(heard(artifact)).toBe(false);
      }
      // The flood's first runs held their slots throughout: the reserve took none of theirs.
      const [{ early }] = (await a.ds.query(
        `SELECT count(*)::int AS "early" FROM "run" WHERE "tenant" = $1 AND "started_at" < $2`,
        [FLOOD, r.completed_at],
      )) as Array<{ early: number }>;
      expect(early).toBe(CAPACITY);
    } finally {
      await notifications.close();
    }
  }, 240_000);

  it('two saturated replicas woken by the same notifications naming their runs claim each newcomer once, never beyond their reserve', async () => {
    const CAPACITY = 32;
    const RESERVE = CAPACITY / 16;
    const env = { OPENWOP_RATE_LIMIT_ENABLED: 'false', OPENWOP_FAIR_CLAIMS: 'true', OPENWOP_SCHEDULER_ENABLED: 'true' };
    const configFile = { runs: { maxActiveRuns: CAPACITY } };
    const a = await createTestApp({ env: { ...env, OPENWOP_INSTANCE_ID: 'fair-a' }, configFile });
    apps.push(a);
    const b = await createTestApp({ env: { ...env, OPENWOP_INSTANCE_ID: 'fair-b' }, configFile, database: a.databaseName });
    apps.push(b);
    await installChains(a, FLOOD, 'vendor.test.hold', hold(8000));
    const floodKey = await a.key({ tenant: FLOOD, scopes: SCOPES });
    // Both replicas' slots are the flood's: a starts its own by their inserts, b claims the announced ones.
    await flood(a, floodKey, CAPACITY * 2 + 8, CAPACITY * 2);

    // How many runs each replica holds at once (leases in force), sampled until the quiet runs are done.
    const most = new Map<string, number>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const rows = (await a.ds.query(
          `SELECT "lease_owner" AS "owner", count(*)::int AS n FROM "run" WHERE "kind" = 'workflow' AND ${CLAIM_STATUSES} AND "lease_owner" IS NOT NULL AND "lease_expires_at" > now() GROUP BY 1`,
        )) as Array<{ owner: string; n: number }>;
        for (const r of rows) most.set(r.owner, Math.max(most.get(r.owner) ?? 0, r.n));
        await new Promise((r) => setTimeout(r, 10));
      }
    })();

    // Twelve tenants' first runs, inserted as a replica that could not claim them inserts them: each
    // announced by a notification naming it, which both replicas hear. Each holds its slot a moment
    // (the sampler sees the runs a replica holds together).
    const quiet = Array.from({ length: 12 }, (_, i) => ({ tenant: `quiet-${i}`, runId: randomUUID() }));
    await Promise.all(
      quiet.map((q) =>
        insertPendingRun(
          a.ds,
          {
            tenant: q.tenant,
            workspace: null,
            principal: 'tester',
            metadata: {},
            workflowId: 'vendor.test.hold',
            definitionText: JSON.stringify(hold(300)['vendor.test.hold']),
            inputs: {},
            configurable: {},
            scopes: SCOPES,
            idempotencyKey: null,
            requestHash: null,
            scopeId: null,
            dedupScope: null,
            traceParent: null,
            traceState: null,
            catalogVersion: '0',
            runId: q.runId,
            createResponse: null,
          },
          null,
        ),
      ),
    );
    const ids = quiet.map((q) => q.runId);
    const done = await waitFor(a, `SELECT count(*)::int AS n FROM "run" WHERE "id" = ANY($1) AND "status" = 'completed'`, [ids], ids.length, 120_000);
    sampling = false;
    await sampler;
    expect(done).toBe(ids.length);

    const runs = (await a.ds.query(`SELECT "fence", "completed_at" FROM "run" WHERE "id" = ANY($1)`, [ids])) as Array<{ fence: number; completed_at: Date }>;
    // Each claimed once (a second claim would have raised its fence), and every one in a slot of a
    // reserve: finished while the flood's runs still held every slot of the capacity.
    expect(runs.map((r) => r.fence)).toEqual(ids.map(() => 1));
    const last = new Date(Math.max(...runs.map((r) => r.completed_at.getTime())));
    expect(await floodFinishedBy(a, last)).toBe(0);
    // Never more runs on a replica than its capacity and its reserve.
    expect(most.size).toBe(2);
    for (const n of most.values()) expect(n).toBeLessThanOrEqual(CAPACITY + RESERVE);
    await expectNoDoubleCompletion(a);
  }, 240_000);
});
