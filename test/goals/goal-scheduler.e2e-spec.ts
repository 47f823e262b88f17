/**
 * The continuation scheduler, driven by hand: a manual clock and a fake worker (a runtime that
 * honours idempotency keys). Each test counts runs and events per goal.
 */
import { SchedulerRegistry } from '@nestjs/schedule';
import { GoalSchedulerService } from '../../src/capabilities/goals/goal-scheduler.service';
import { HealthService } from '../../src/platform/health/health.service';
import { createTestApp, TestApp } from '../support/test-app';
import { FakeWorker, goalBody, instrument, ManualClock } from './goal-test-kit';

describe('goal continuation scheduler', () => {
  let t: TestApp;
  let token: string;
  const clock = new ManualClock();
  const worker = new FakeWorker();
  let tick: () => ReturnType<GoalSchedulerService['runOnce']>;

  beforeAll(async () => {
    t = await createTestApp({ configFile: { goals: { leaseMs: 5000, retryDelayMs: 2000, batchSize: 7, concurrency: 3 } } });
    ({ tick } = instrument(t, clock, worker));
    token = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['goals:read', 'goals:write', 'runs:create'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  beforeEach(() => {
    worker.plan = () => ({ output: { green: false } });
  });

  const create = async (over: Record<string, unknown> = {}) => {
    const res = await t.http('POST', '/v1/goals', { token, body: goalBody(over) });
    expect(res.status).toBe(201);
    return res.body as { id: string; continuation: { armRef: string } };
  };
  const read = async (id: string) => (await t.http('GET', `/v1/goals/${id}`, { token })).body;
  const status = async (id: string) => (await t.http('GET', `/v1/goals/${id}/status`, { token })).body;
  const events = async (goalId: string) =>
    (await t.ds.query(`SELECT "type", "payload" FROM "event" WHERE "payload"->>'goalId' = $1 ORDER BY "sequence"`, [goalId])) as Array<{ type: string; payload: Record<string, unknown> }>;
  /** Ticks `times` slots of `stepMs`. */
  const run = async (times: number, stepMs = 1000) => {
    for (let i = 0; i < times; i++) {
      clock.advance(stepMs);
      await tick();
    }
  };

  it('advertises schedule and commitment continuation once a worker is available, and arms the goal with a job reference', async () => {
    const doc = await t.http('GET', '/.well-known/openwop');
    expect(doc.body.agents.goals.continuation).toEqual(['schedule', 'commitment', 'manual']);
    const g = await create();
    expect(g.continuation.armRef).toBe(`goal:${g.id}:continuation`);
    await t.http('POST', `/v1/goals/${g.id}/abandon`, { token });
  });

  it('stops at exactly maxLoopIterations: the Nth unsatisfied verdict closes the goal and no N+1th run is started', async () => {
    const g = await create({ bounds: { maxLoopIterations: 3 } });
    await tick();
    expect(worker.runsOf(g.id)).toHaveLength(1);
    await tick(); // same instant: nothing is due again
    expect(worker.runsOf(g.id)).toHaveLength(1);
    await run(2);
    expect(await read(g.id)).toMatchObject({ state: 'bound-exceeded', progress: { iterations: 3 }, continuation: { armRef: null } });
    await run(5);
    expect(worker.runsOf(g.id)).toHaveLength(3);
    const ev = await events(g.id);
    expect(ev.map((e) => e.type)).toEqual(['goal.evaluated', 'goal.evaluated', 'goal.evaluated', 'goal.closed']);
    expect(ev.map((e) => e.payload.iterations).slice(0, 3)).toEqual([1, 2, 3]);
    expect(ev[3].payload).toEqual({ goalId: g.id, finalState: 'bound-exceeded' });
    expect((await read(g.id)).progress.contributingRunIds).toEqual(worker.runsOf(g.id));
  });

  it('a satisfied verdict on the last allowed iteration wins over the bound', async () => {
    const g = await create({ bounds: { maxLoopIterations: 2 } });
    worker.plan = (goal) => ({ output: { green: goal.iteration === 2 } });
    await tick();
    await run(1);
    expect(await read(g.id)).toMatchObject({ state: 'satisfied', progress: { iterations: 2 }, completion: { lastVerdict: { satisfied: true } } });
    expect((await events(g.id)).at(-1)!.payload).toEqual({ goalId: g.id, finalState: 'satisfied' });
    await run(3);
    expect(worker.runsOf(g.id)).toHaveLength(2);
  });

  it('closes a goal at its wall-clock deadline even when no run reports', async () => {
    const manual = (await t.http('POST', '/v1/goals', { token, body: goalBody({ continuation: { mode: 'manual' }, schedule: undefined, bounds: { runTimeoutMs: 1500 } }) })).body;
    const scheduled = await create({ bounds: { runTimeoutMs: 2500 } });
    await tick(); // scheduled: iteration 1
    await run(2); // t+1000: iteration 2, t+2000: iteration 3 (manual crossed its deadline at t+1501)
    expect((await read(manual.id)).state).toBe('bound-exceeded');
    expect((await read(scheduled.id)).state).toBe('active');
    expect(worker.runsOf(scheduled.id)).toHaveLength(3);
    clock.advance(501); // t+2501: past the deadline, before the next slot
    const pass = await tick();
    expect(pass.closed).toBeGreaterThanOrEqual(1);
    expect(await read(scheduled.id)).toMatchObject({ state: 'bound-exceeded', progress: { iterations: 3 } });
    await run(3);
    expect(worker.runsOf(scheduled.id)).toHaveLength(3);
    expect((await events(manual.id)).map((e) => e.type)).toEqual(['goal.closed']);
  });

  it('crossing the cost ceiling closes the goal: the crossing run is recorded but not judged, and nothing more runs', async () => {
    const g = await create({ bounds: { maxCostUsd: 1 } });
    worker.plan = (goal) => ({ output: { green: goal.iteration >= 3 }, costUsd: 0.4 });
    await tick();
    await run(2);
    const goal = await read(g.id);
    expect(goal).toMatchObject({ state: 'bound-exceeded', progress: { iterations: 2 } });
    expect(goal.progress.contributingRunIds).toHaveLength(3);
    expect((await status(g.id)).accumulatedCostUsd).toBeCloseTo(1.2);
    expect((await events(g.id)).map((e) => e.type)).toEqual(['goal.evaluated', 'goal.evaluated', 'goal.closed']);
    await run(2);
    expect(worker.runsOf(g.id)).toHaveLength(3);
  });

  it('pause stops dispatching; resume re-arms with one catch-up iteration, not a backlog', async () => {
    const g = await create({ bounds: { maxLoopIterations: 50 } });
    await tick();
    expect((await t.http('POST', `/v1/goals/${g.id}/pause`, { token })).status).toBe(200);
    await run(10);
    expect(worker.runsOf(g.id)).toHaveLength(1);
    // Only the deadline check stays armed (the host limit fills the undeclared runTimeoutMs).
    const g2 = await read(g.id);
    expect(new Date((await status(g.id)).nextDueAt).getTime()).toBe(Date.parse(g2.createdAt) + g2.bounds.runTimeoutMs + 1);
    await t.http('POST', `/v1/goals/${g.id}/resume`, { token });
    await tick();
    await tick();
    expect(worker.runsOf(g.id)).toHaveLength(2);
    await run(1);
    expect(worker.runsOf(g.id)).toHaveLength(3);
    await t.http('POST', `/v1/goals/${g.id}/abandon`, { token });
  });

  it('after downtime a goal gets one catch-up iteration, not one per missed slot', async () => {
    const g = await create({ bounds: { maxLoopIterations: 50 } });
    await tick();
    clock.advance(3_600_000); // an hour of missed one-second slots
    await tick();
    await tick();
    expect(worker.runsOf(g.id)).toHaveLength(2);
    expect(new Date((await status(g.id)).nextDueAt).getTime()).toBe(clock.now().getTime() + 1000);
    await t.http('POST', `/v1/goals/${g.id}/abandon`, { token });
  });

  it('a run that raises a confidence escalation closes the goal escalated, unjudged, and continuation stops', async () => {
    const g = await create({ bounds: { maxLoopIterations: 50 } });
    worker.plan = (goal) => (goal.iteration === 2 ? { status: 'waiting-input', escalated: true } : { output: { green: false } });
    await tick();
    await run(3);
    expect(await read(g.id)).toMatchObject({ state: 'escalated', progress: { iterations: 1 }, continuation: { armRef: null } });
    expect(worker.runsOf(g.id)).toHaveLength(2);
    expect((await events(g.id)).map((e) => [e.type, e.payload.finalState])).toEqual([['goal.evaluated', undefined], ['goal.closed', 'escalated']]);
  });

  it('abandon disarms continuation: no further runs, one goal.closed', async () => {
    const g = await create();
    await tick();
    await t.http('POST', `/v1/goals/${g.id}/abandon`, { token });
    await run(3);
    expect(worker.runsOf(g.id)).toHaveLength(1);
    expect((await events(g.id)).filter((e) => e.type === 'goal.closed').map((e) => e.payload.finalState)).toEqual(['abandoned']);
  });

  it('follows a running run across ticks and judges it once it is terminal', async () => {
    const g = await create({ bounds: { maxLoopIterations: 50 } });
    let done = false;
    worker.plan = () => (done ? { output: { green: false } } : { running: true });
    await tick();
    const runId = worker.runsOf(g.id)[0];
    expect((await status(g.id)).pendingRunId).toBe(runId);
    await run(3, 100);
    expect((await read(g.id)).progress.iterations).toBe(0);
    expect(worker.runsOf(g.id)).toHaveLength(1);
    done = true;
    await run(1, 100);
    expect(await read(g.id)).toMatchObject({ progress: { iterations: 1, contributingRunIds: [runId] } });
    expect((await status(g.id)).pendingRunId).toBeNull();
    await t.http('POST', `/v1/goals/${g.id}/abandon`, { token });
  });

  it('records a verdict once per run: a run reported by a client and then collected by the scheduler is judged once', async () => {
    const g = await create({ bounds: { maxLoopIterations: 50 } });
    let done = false;
    worker.plan = () => (done ? { output: { green: true } } : { running: true });
    await tick();
    const runId = worker.runsOf(g.id)[0];
    const reported = await t.http('POST', `/v1/goals/${g.id}/runs`, { token, body: { runId, output: { green: false } } });
    expect(reported.body.progress.iterations).toBe(1);
    done = true; // the worker would now say "satisfied" for the same run: it must not be asked to re-judge it
    await run(1, 100);
    const after = await read(g.id);
    expect(after).toMatchObject({ state: 'active', progress: { iterations: 1, contributingRunIds: [runId] }, completion: { lastVerdict: { satisfied: false, runId } } });
    expect((await events(g.id)).filter((e) => e.type === 'goal.evaluated')).toHaveLength(1);
    expect((await status(g.id)).pendingRunId).toBeNull();
    await run(1);
    expect(worker.runsOf(g.id)).toHaveLength(2);
    await t.http('POST', `/v1/goals/${g.id}/abandon`, { token });
  });

  it('a failing worker spends no iteration and is retried with the same idempotency key; health shows it', async () => {
    const g = await create({ bounds: { maxLoopIterations: 50 } });
    const realStart = worker.start.bind(worker);
    let fail = true;
    worker.start = async (goal, ctx) => {
      if (fail && goal.goalId === g.id) {
        worker.startCalls.push(ctx.idempotencyKey);
        throw new Error('runtime down');
      }
      return realStart(goal, ctx);
    };
    try {
      await tick();
      expect(worker.runsOf(g.id)).toHaveLength(0);
      expect(t.moduleRef.get(HealthService).snapshot()['goals.scheduler']).toMatchObject({ ok: false });
      expect((await read(g.id)).progress.iterations).toBe(0);
      fail = false;
      clock.advance(2000);
      await tick();
      const keys = worker.startCalls.filter((k) => k.startsWith(g.id));
      expect(keys).toEqual([`${g.id}:1`, `${g.id}:1`]);
      expect(worker.runsOf(g.id)).toHaveLength(1);
      expect((await read(g.id)).progress.iterations).toBe(1);
    } finally {
      worker.start = realStart;
      await t.http('POST', `/v1/goals/${g.id}/abandon`, { token });
    }
  });

  it('refuses an invalid schedule or an unknown worker', async () => {
    for (const [over, status, code] of [
      [{ schedule: { cron: 'whenever' } }, 400, 'validation_error'],
      [{ schedule: { intervalMs: 5 } }, 400, 'validation_error'],
      [{ schedule: { intervalMs: 1000, cron: '* * * * *' } }, 400, 'validation_error'],
      [{ schedule: { cron: '* * * * *', timezone: 'Mars/Olympus' } }, 400, 'validation_error'],
      [{ worker: 'nobody' }, 422, 'worker_unavailable'],
      [{ continuation: { mode: 'manual' } }, 400, 'validation_error'],
    ] as Array<[Record<string, unknown>, number, string]>) {
      const res = await t.http('POST', '/v1/goals', { token, body: goalBody(over) });
      expect([res.status, res.body.error]).toEqual([status, code]);
    }
  });

  it('the ticker entry point uses the goal clock, and no interval is registered while the scheduler is disabled', async () => {
    const scheduler = t.moduleRef.get(GoalSchedulerService);
    expect(t.moduleRef.get(SchedulerRegistry).getIntervals()).not.toContain('goals.continuation');
    const g = await create({ bounds: { maxLoopIterations: 50 } });
    const pass = await scheduler.tick();
    expect(pass?.claimed).toBeGreaterThanOrEqual(1);
    expect(worker.runsOf(g.id)).toHaveLength(1);
    expect(new Date((await status(g.id)).nextDueAt).getTime()).toBe(clock.now().getTime() + 1000);
    await t.http('POST', `/v1/goals/${g.id}/abandon`, { token });
  });

  it('runs a cron goal at its cron slots', async () => {
    const g = await create({ schedule: { cron: '*/10 * * * *' }, bounds: { maxLoopIterations: 50 } });
    const due = new Date((await status(g.id)).nextDueAt);
    expect(due.getUTCMinutes() % 10).toBe(0);
    expect(due.getUTCSeconds()).toBe(0);
    await tick();
    expect(worker.runsOf(g.id)).toHaveLength(0);
    clock.advance(due.getTime() - clock.now().getTime());
    await tick();
    expect(worker.runsOf(g.id)).toHaveLength(1);
    expect(new Date((await status(g.id)).nextDueAt).getTime()).toBe(due.getTime() + 600_000);
    await t.http('POST', `/v1/goals/${g.id}/abandon`, { token });
  });
});
