/**
 * The default goal worker runs the goal's chain on this host's own run engine: a scheduled goal
 * naming an applied workflow chain starts real local runs, the host-schema judge judges each run's
 * outputs, bounds hold, tenants stay apart, and a failed run is recorded as failed.
 */
import { checkGoalWorkerContract } from '@openwop-host/plugin-sdk';
import { GoalClock } from '../../src/capabilities/goals/goal-clock';
import { GoalExtensionsService } from '../../src/capabilities/goals/goal-extensions.service';
import { GoalSchedulerService } from '../../src/capabilities/goals/goal-scheduler.service';
import { installChains, runEvents, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';
import { goalBody, ManualClock } from './goal-test-kit';

/** Run outputs are keyed by sink node: `{ check: { green, iteration } }`. */
const GREEN = { type: 'object', required: ['check'], properties: { check: { type: 'object', required: ['green'], properties: { green: { const: true } } } } };

describe('goals: the local-run worker (default continuation on the run engine)', () => {
  let t: TestApp;
  const clock = new ManualClock();
  let tick: () => ReturnType<GoalSchedulerService['runOnce']>;
  let acme: string;
  let acmeRuns: string;
  let globex: string;

  beforeAll(async () => {
    t = await createTestApp();
    t.moduleRef.get(GoalClock).useSource(clock.now);
    const scheduler = t.moduleRef.get(GoalSchedulerService);
    tick = () => scheduler.runOnce({ now: clock.now() });
    for (const tenant of ['acme', 'globex']) {
      await installChains(t, tenant, `vendor.test.goals-${tenant}`, {
        'vendor.test.green': { nodes: [{ id: 'check', typeId: 'core.noop', config: { green: true, iteration: '{{inputs.iteration}}' } }] },
        'vendor.test.red': { nodes: [{ id: 'check', typeId: 'core.noop', config: { green: false } }] },
        'vendor.test.broken': { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'vendor.test.no-such-tool' } }] },
      });
    }
    acme = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['goals:read', 'goals:write', 'runs:create'] });
    acmeRuns = await t.key({ tenant: 'acme', principal: 'auditor', scopes: ['runs:read'] });
    globex = await t.key({ tenant: 'globex', principal: 'gina', scopes: ['goals:read', 'goals:write', 'runs:read', 'runs:create'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  /** Ticks (advancing the clock a slot each time) until the goal is closed; answers its runs. */
  async function driveToClose(token: string, id: string, maxTicks = 40): Promise<{ goal: Record<string, any>; runs: Array<Record<string, any>> }> { // eslint-disable-line @typescript-eslint/no-explicit-any
    for (let i = 0; i < maxTicks; i++) {
      await tick();
      const g = await t.http('GET', `/v1/goals/${id}`, { token });
      if (g.body.state !== 'active') {
        const runs = await t.http('GET', `/v1/goals/${id}/runs`, { token });
        return { goal: g.body, runs: runs.body.runs };
      }
      await new Promise((r) => setTimeout(r, 60));
      clock.advance(1000);
    }
    throw new Error(`goal ${id} did not close`);
  }

  it('a goal naming a workflow gets the local-run worker by default; one naming none is refused (422), nothing written', async () => {
    const caps = await t.http('GET', '/.well-known/openwop', {});
    expect(caps.body.agents.goals.continuation).toEqual(expect.arrayContaining(['schedule', 'commitment', 'manual']));
    const before = (await t.ds.query(`SELECT count(*)::int AS n FROM "goal"`))[0].n;
    const refused = await t.http('POST', '/v1/goals', { token: acme, body: goalBody({ criteria: GREEN }) });
    expect([refused.status, refused.body.error, refused.body.details]).toEqual([422, 'worker_rejected', { worker: 'local-run' }]);
    expect((await t.ds.query(`SELECT count(*)::int AS n FROM "goal"`))[0].n).toBe(before);
  });

  it('conforms to the SDK goal-worker contract (one run per idempotency key, a terminal outcome)', async () => {
    const worker = t.moduleRef.get(GoalExtensionsService).worker('local-run')!;
    // A real goal: its runs act with what its creator delegated (an unknown goal delegates nothing, and starts no run).
    const goal = await t.http('POST', '/v1/goals', { token: acme, body: goalBody({ criteria: GREEN, workflowId: 'vendor.test.green' }) });
    expect(goal.status).toBe(201);
    const subject = { goalId: goal.body.id as string, tenant: 'acme', principal: 'alice', objective: 'contract', iteration: 1, workflowId: 'vendor.test.green' };
    expect(await checkGoalWorkerContract(worker, { subject, waitMs: 50 })).toEqual([]);
    // Another tenant's worker call never reads this tenant's run.
    const { runId } = await worker.start(subject, { idempotencyKey: 'contract-isolation', signal: new AbortController().signal });
    await waitForStatus(t, acmeRuns, runId, ['completed']);
    expect(await worker.collect({ ...subject, tenant: 'globex' }, runId, new AbortController().signal)).toEqual({ runId, status: 'failed' });
    expect(await worker.collect(subject, runId, new AbortController().signal)).toMatchObject({ runId, status: 'completed', output: { check: { green: true, iteration: 1 } } });
  });

  it('runs the chain locally and the host judge finds the run outputs satisfy the criteria', async () => {
    const res = await t.http('POST', '/v1/goals', { token: acme, body: goalBody({ criteria: GREEN, workflowId: 'vendor.test.green' }) });
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    expect((await t.http('GET', `/v1/goals/${id}/status`, { token: acme })).body).toMatchObject({ worker: 'local-run', workflowId: 'vendor.test.green' });
    const { goal, runs } = await driveToClose(acme, id);
    expect(goal).toMatchObject({ state: 'satisfied', progress: { iterations: 1 }, completion: { lastVerdict: { satisfied: true, confidence: 1 } } });
    expect(runs).toEqual([expect.objectContaining({ ordinal: 1, status: 'completed', satisfied: true })]);
    // The contributing run is a real engine run of the goal's tenant, started as the goal's creator.
    const run = await waitForStatus(t, acmeRuns, runs[0].runId, ['completed']);
    expect(run).toMatchObject({ workflowId: 'vendor.test.green', owner: { tenant: 'acme', principal: 'alice' }, outputs: { check: { green: true, iteration: 1 } } });
    expect(goal.completion.lastVerdict.runId).toBe(runs[0].runId);
    const events = await runEvents(t, acmeRuns, runs[0].runId);
    expect(events.map((e) => e.type)).toEqual(['run.started', 'budget.reserved', 'node.started', 'node.completed', 'run.completed']);
    expect(events[0].payload).toMatchObject({ inputs: { goalId: id, iteration: 1 } });
  });

  it('an unsatisfied goal runs once per iteration and stops at maxLoopIterations (no extra run)', async () => {
    const res = await t.http('POST', '/v1/goals', { token: acme, body: goalBody({ criteria: GREEN, workflowId: 'vendor.test.red', bounds: { maxLoopIterations: 3 } }) });
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    const { goal, runs } = await driveToClose(acme, id);
    expect(goal).toMatchObject({ state: 'bound-exceeded', progress: { iterations: 3 }, completion: { lastVerdict: { satisfied: false } } });
    expect(runs.map((r) => [r.ordinal, r.status, r.satisfied])).toEqual([
      [1, 'completed', false],
      [2, 'completed', false],
      [3, 'completed', false],
    ]);
    const started = (await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "tenant" = 'acme' AND "workflow_id" = 'vendor.test.red'`))[0].n;
    expect(started).toBe(3);
  });

  it('a failed run is recorded as failed and judged unsatisfied', async () => {
    const res = await t.http('POST', '/v1/goals', { token: acme, body: goalBody({ criteria: GREEN, workflowId: 'vendor.test.broken', bounds: { maxLoopIterations: 1 } }) });
    const id = res.body.id as string;
    const { goal, runs } = await driveToClose(acme, id);
    expect(goal).toMatchObject({ state: 'bound-exceeded', progress: { iterations: 1 } });
    expect(runs).toEqual([expect.objectContaining({ status: 'failed', satisfied: false })]);
    const run = await waitForStatus(t, acmeRuns, runs[0].runId, ['failed']);
    expect(run.error).toMatchObject({ code: expect.any(String) });
  });

  it('a chain that cannot run (not installed) is a failed run of each iteration, counted against the bounds, not retried forever', async () => {
    const res = await t.http('POST', '/v1/goals', { token: acme, body: goalBody({ criteria: GREEN, workflowId: 'vendor.test.not-installed', bounds: { maxLoopIterations: 2 } }) });
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    const { goal, runs } = await driveToClose(acme, id);
    expect(goal).toMatchObject({ state: 'bound-exceeded', progress: { iterations: 2 } });
    expect(runs.map((r) => [r.ordinal, r.status, r.satisfied])).toEqual([
      [1, 'failed', false],
      [2, 'failed', false],
    ]);
    // Each iteration's run exists, failed with the refusal POST /v1/runs would have answered, and has its events.
    for (const r of runs) {
      const run = await waitForStatus(t, acmeRuns, r.runId, ['failed']);
      expect(run).toMatchObject({ workflowId: 'vendor.test.not-installed', owner: { tenant: 'acme', principal: 'alice' }, error: { code: 'not_found' } });
      expect(run.error.message).toContain('vendor.test.not-installed');
      expect((await runEvents(t, acmeRuns, r.runId)).map((e) => e.type)).toEqual(['run.started', 'run.failed']);
    }
    expect(new Set(runs.map((r) => r.runId)).size).toBe(2);
    // The same iteration key answers the same recorded run (a replica taking over asks again).
    const worker = t.moduleRef.get(GoalExtensionsService).worker('local-run')!;
    const subject = { goalId: id, tenant: 'acme', principal: 'alice', objective: 'refused', iteration: 1, workflowId: 'vendor.test.not-installed' };
    const first = await worker.start(subject, { idempotencyKey: 'refused-once', signal: new AbortController().signal });
    const again = await worker.start(subject, { idempotencyKey: 'refused-once', signal: new AbortController().signal });
    expect(again.runId).toBe(first.runId);
    const collected = await worker.collect(subject, first.runId, new AbortController().signal);
    expect(collected).toMatchObject({ runId: first.runId, status: 'failed' });
    expect(collected).not.toHaveProperty('output');
  });

  it('POST /v1/runs still refuses a chain that is not installed (404), writing no run', async () => {
    const runner = await t.key({ tenant: 'acme', principal: 'runner', scopes: ['runs:create', 'runs:read'] });
    const before = (await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "tenant" = 'acme'`))[0].n;
    const res = await t.http('POST', '/v1/runs', { token: runner, body: { workflowId: 'vendor.test.not-installed' } });
    expect([res.status, res.body.error]).toEqual([404, 'not_found']);
    expect((await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "tenant" = 'acme'`))[0].n).toBe(before);
  });

  it('two tenants: each goal runs its own tenant\'s chain, and neither sees the other\'s goal or runs', async () => {
    const a = (await t.http('POST', '/v1/goals', { token: acme, body: goalBody({ criteria: GREEN, workflowId: 'vendor.test.green' }) })).body.id as string;
    const g = (await t.http('POST', '/v1/goals', { token: globex, body: goalBody({ criteria: GREEN, workflowId: 'vendor.test.green' }) })).body.id as string;
    const [ra, rg] = [await driveToClose(acme, a), await driveToClose(globex, g)];
    expect([ra.goal.state, rg.goal.state]).toEqual(['satisfied', 'satisfied']);
    const globexRun = rg.runs[0].runId as string;
    expect((await waitForStatus(t, globex, globexRun, ['completed'])).owner).toMatchObject({ tenant: 'globex', principal: 'gina' });
    // 404 across tenants, for the goal and for the run alike.
    expect((await t.http('GET', `/v1/goals/${g}`, { token: acme })).status).toBe(404);
    expect((await t.http('GET', `/v1/goals/${a}/runs`, { token: globex })).status).toBe(404);
    expect((await t.http('GET', `/v1/runs/${globexRun}`, { token: acmeRuns })).status).toBe(404);
    expect((await t.http('GET', `/v1/runs/${ra.runs[0].runId}`, { token: globex })).status).toBe(404);
    // A chain installed for one tenant only is not a workflow of the other: its goal's iteration is a
    // failed run of its own tenant (not_found, as POST /v1/runs answers), and nothing of acme's chain executes.
    await installChains(t, 'acme', 'vendor.test.acme-only', { 'vendor.test.acme-only': { nodes: [{ id: 'check', typeId: 'core.noop', config: { green: true } }] } });
    const lone = (await t.http('POST', '/v1/goals', { token: globex, body: goalBody({ criteria: GREEN, workflowId: 'vendor.test.acme-only', bounds: { maxLoopIterations: 1 } }) })).body.id as string;
    const closed = await driveToClose(globex, lone);
    expect(closed.goal).toMatchObject({ state: 'bound-exceeded', progress: { iterations: 1 } });
    const refused = await waitForStatus(t, globex, closed.runs[0].runId, ['failed']);
    expect(refused).toMatchObject({ owner: { tenant: 'globex', principal: 'gina' }, error: { code: 'not_found' }, nodeStates: {} });
    expect((await t.http('GET', `/v1/runs/${closed.runs[0].runId}`, { token: acmeRuns })).status).toBe(404);
    expect((await t.ds.query(`SELECT count(*)::int AS n FROM "run_node" n JOIN "run" r ON r."id" = n."run_id" WHERE r."tenant" = 'globex' AND r."workflow_id" = 'vendor.test.acme-only'`))[0].n).toBe(0);
    expect((await t.ds.query(`SELECT count(*)::int AS n FROM "run_node" WHERE "run_id" = $1`, [closed.runs[0].runId]))[0].n).toBe(0);
  });
});
