/**
 * Two host instances on one database share the goal scheduler: every iteration runs exactly once,
 * including when one instance dies mid-tick holding claims (its leases expire and the other
 * instance resumes the same iterations with the same idempotency keys).
 */
import { GoalClock } from '../../src/capabilities/goals/goal-clock';
import { GoalExtensionsService } from '../../src/capabilities/goals/goal-extensions.service';
import { GoalSchedulerService } from '../../src/capabilities/goals/goal-scheduler.service';
import { GoalsService } from '../../src/capabilities/goals/goals.service';
import type { Principal } from '../../src/platform/identity/principal';
import { createTestApp, TestApp } from '../support/test-app';
import { FakeWorker, goalBody, ManualClock } from './goal-test-kit';

const LEASE_MS = 5000;
const CONFIG = { goals: { leaseMs: LEASE_MS, batchSize: 25, concurrency: 4 } };

async function until(cond: () => boolean): Promise<void> {
  // Waits for the other instance to reach a point (a condition, not a duration).
  while (!cond()) await new Promise((r) => setImmediate(r));
}

describe('goal scheduler on two host instances sharing one database', () => {
  let a: TestApp;
  let b: TestApp;
  const clock = new ManualClock();
  const runtime = new FakeWorker(() => ({ output: { green: false } }));
  let hanging: ReturnType<FakeWorker['hangingView']>;

  beforeAll(async () => {
    a = await createTestApp({ configFile: CONFIG, env: { OPENWOP_INSTANCE_ID: 'replica-a' } });
    b = await createTestApp({ configFile: CONFIG, env: { OPENWOP_INSTANCE_ID: 'replica-b' }, database: a.databaseName });
    hanging = runtime.hangingView();
    for (const t of [a, b]) t.moduleRef.get(GoalClock).useSource(clock.now);
    b.moduleRef.get(GoalExtensionsService).registerWorker('fake', runtime);
  });

  afterAll(async () => {
    hanging?.release();
    await b?.close();
    await a?.close();
  });

  const owner = (tenant: string): Principal => ({ tenant, principal: 'alice', scopes: new Set(['goals:write', 'runs:create']), kind: 'system' });

  async function createGoals(t: TestApp, n: number, maxLoopIterations: number, tag: string): Promise<string[]> {
    const goals = t.moduleRef.get(GoalsService);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      // Spread over tenants: the scheduler is cross-tenant, every write stays in the goal's tenant.
      const g = await goals.create(owner(`tenant-${tag}-${i % 5}`), goalBody({ worker: 'fake', bounds: { maxLoopIterations } }));
      ids.push(g.id);
    }
    return ids;
  }

  async function verdictsOf(t: TestApp, ids: string[]) {
    return (await t.ds.query(
      `SELECT "payload"->>'goalId' AS goal, "payload"->>'runId' AS run, ("payload"->>'iterations')::int AS iteration FROM "event" WHERE "type" = 'goal.evaluated' AND "payload"->>'goalId' = ANY($1)`,
      [ids],
    )) as Array<{ goal: string; run: string; iteration: number }>;
  }

  function expectEachIterationOnce(verdicts: Array<{ goal: string; run: string; iteration: number }>, ids: string[], perGoal: number) {
    expect(verdicts).toHaveLength(ids.length * perGoal);
    expect(new Set(verdicts.map((v) => v.run)).size).toBe(verdicts.length);
    expect(new Set(verdicts.map((v) => `${v.goal}#${v.iteration}`)).size).toBe(verdicts.length);
    for (const id of ids) expect(runtime.runsOf(id)).toHaveLength(perGoal);
  }

  it('runs 200 goals with both instances ticking concurrently: exactly the expected iterations, none twice', async () => {
    // Instance A gets the same (non-hanging) runtime for this leg.
    a.moduleRef.get(GoalExtensionsService).registerWorker('fake', runtime);
    const ids = await createGoals(a, 200, 3, 'p');
    const sa = a.moduleRef.get(GoalSchedulerService);
    const sb = b.moduleRef.get(GoalSchedulerService);
    let claimedA = 0;
    let claimedB = 0;
    for (let slot = 0; slot < 5; slot++) {
      const now = clock.now();
      const [ra, rb] = await Promise.all([sa.runOnce({ now }), sb.runOnce({ now })]);
      claimedA += ra.claimed;
      claimedB += rb.claimed;
      expect(ra.fenced + rb.fenced).toBe(0);
      clock.advance(1000);
    }
    // Both instances took part.
    expect(claimedA).toBeGreaterThan(0);
    expect(claimedB).toBeGreaterThan(0);
    const states = (await a.ds.query(`SELECT "state", "iterations", count(*)::int AS n FROM "goal" WHERE "id" = ANY($1) GROUP BY 1, 2`, [ids])) as Array<{ state: string; iterations: number; n: number }>;
    expect(states).toEqual([{ state: 'bound-exceeded', iterations: 3, n: 200 }]);
    expectEachIterationOnce(await verdictsOf(a, ids), ids, 3);
    // Every event landed in its own goal's tenant stream, whichever instance wrote it.
    const misplaced = (await a.ds.query(
      `SELECT count(*)::int AS n FROM "event" e JOIN "event_stream" s ON s."key" = e."stream_key" JOIN "goal" g ON g."id"::text = e."payload"->>'goalId' WHERE g."id" = ANY($1) AND (s."tenant" <> g."tenant" OR s."stream_id" <> 'host')`,
      [ids],
    )) as Array<{ n: number }>;
    expect(misplaced[0].n).toBe(0);
    const runsElsewhere = (await a.ds.query(`SELECT count(*)::int AS n FROM "goal_run" r JOIN "goal" g ON g."id" = r."goal_id" WHERE g."id" = ANY($1) AND r."tenant" <> g."tenant"`, [ids])) as Array<{ n: number }>;
    expect(runsElsewhere[0].n).toBe(0);
    // Without crashes every idempotency key was sent exactly once.
    const keys = runtime.startCalls.filter((k) => ids.includes(k.slice(0, 36)));
    expect(keys).toHaveLength(600);
    expect(new Set(keys).size).toBe(600);
    a.moduleRef.get(GoalExtensionsService).unregisterWorker('fake');
  });

  it('when one instance dies mid-tick holding claims, the other takes over after the lease expires and no iteration runs twice', async () => {
    a.moduleRef.get(GoalExtensionsService).registerWorker('fake', hanging.worker);
    const ids = await createGoals(b, 60, 3, 'k');
    const sa = a.moduleRef.get(GoalSchedulerService);
    const sb = b.moduleRef.get(GoalSchedulerService);

    // A claims a batch, asks the runtime to start runs, and hangs there ("killed": it never completes).
    const killed = sa.runOnce({ now: clock.now(), maxGoals: 25 });
    await until(() => hanging.hung() === 4);
    const heldByA = (await b.ds.query(`SELECT count(*)::int AS n FROM "goal" WHERE "lease_owner" LIKE 'replica-a:%'`)) as Array<{ n: number }>;
    expect(heldByA[0].n).toBe(25);

    // B at the same instant works only what A does not hold.
    const sameInstant = await sb.runOnce({ now: clock.now() });
    expect(sameInstant.claimed).toBe(35);

    // After A's leases expire, B takes them over, re-asking the runtime with A's idempotency keys.
    clock.advance(LEASE_MS + 1);
    const takeover = await sb.runOnce({ now: clock.now() });
    expect(takeover.claimed).toBe(60);

    // The dead instance wakes up while the goals are still active: everything it still tries (record
    // the runs it started, dispatch the goals it had claimed) is fenced off by the lost leases.
    hanging.release();
    const late = await killed;
    expect(late.fenced).toBe(25);
    expect(late.recorded).toBe(0);

    for (let slot = 0; slot < 4; slot++) {
      clock.advance(1000);
      await sb.runOnce({ now: clock.now() });
    }
    const states = (await b.ds.query(`SELECT "state", "iterations", count(*)::int AS n FROM "goal" WHERE "id" = ANY($1) GROUP BY 1, 2`, [ids])) as Array<{ state: string; iterations: number; n: number }>;
    expect(states).toEqual([{ state: 'bound-exceeded', iterations: 3, n: 60 }]);
    expectEachIterationOnce(await verdictsOf(b, ids), ids, 3);
    // The 4 iterations A dispatched were re-sent by B with the same key, and the runtime made one run each.
    const keys = runtime.startCalls.filter((k) => ids.includes(k.slice(0, 36)));
    expect(keys.length - new Set(keys).size).toBe(4);
    expect(new Set(ids.flatMap((id) => runtime.runsOf(id))).size).toBe(180);
    // Nothing is left claimed.
    const leased = (await b.ds.query(`SELECT count(*)::int AS n FROM "goal" WHERE "id" = ANY($1) AND "lease_owner" IS NOT NULL`, [ids])) as Array<{ n: number }>;
    expect(leased[0].n).toBe(0);
  });
});
