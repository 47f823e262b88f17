/**
 * A goal's cost bound holds within its runs (RFC 0084): the local-run worker starts each run under a
 * `configurable.budget` of what is left of the goal's `bounds.maxCostUsd`, so one run cannot spend past it.
 */
import { GoalClock } from '../../src/capabilities/goals/goal-clock';
import { GoalSchedulerService } from '../../src/capabilities/goals/goal-scheduler.service';
import { installChains, runEvents, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';
import { goalBody, ManualClock } from './goal-test-kit';

const GREEN = { type: 'object', required: ['after'], properties: { after: { type: 'object' } } };
const spend = (id: string) => ({ id, typeId: 'core.conformance.cost', config: { usd: 0.5 } });

describe('goals: the cost bound as the runs\' budget', () => {
  let t: TestApp;
  const clock = new ManualClock();
  let key: string;
  let reader: string;

  beforeAll(async () => {
    t = await createTestApp();
    t.moduleRef.get(GoalClock).useSource(clock.now);
    await installChains(t, 'acme', 'vendor.test.goal-budget', {
      'vendor.test.spend4': { nodes: [spend('a'), spend('b'), spend('c'), spend('d'), { id: 'after', typeId: 'core.noop' }], edges: [{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }, { from: 'c', to: 'd' }, { from: 'd', to: 'after' }] },
    });
    key = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['goals:read', 'goals:write', 'runs:create'] });
    reader = await t.key({ tenant: 'acme', principal: 'auditor', scopes: ['runs:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('the goal\'s run stops at what is left of maxCostUsd (budget_exhausted), and the goal closes on its bound', async () => {
    const res = await t.http('POST', '/v1/goals', { token: key, body: goalBody({ criteria: GREEN, workflowId: 'vendor.test.spend4', bounds: { maxLoopIterations: 5, maxCostUsd: 1.2 } }) });
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    const tick = () => t.moduleRef.get(GoalSchedulerService).runOnce({ now: clock.now() });
    let runs: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 40 && !runs.length; i++) {
      await tick();
      runs = (await t.http('GET', `/v1/goals/${id}/runs`, { token: key })).body.runs;
      clock.advance(1000);
      await new Promise((r) => setTimeout(r, 60));
    }
    const first = await waitForStatus(t, reader, runs[0].runId as string, ['completed', 'failed']);
    // 0.5 + 0.5 + 0.5 = 1.5 ≥ 1.2: the third step exhausts the run's budget; the fourth never runs.
    expect([first.status, first.error?.code]).toEqual(['failed', 'budget_exhausted']);
    const events = await runEvents(t, reader, runs[0].runId as string);
    expect(events.find((e) => e.type === 'budget.reserved')!.payload).toEqual({ effectiveBudget: { maxCostUsd: 1.2 }, scope: 'run' });
    expect(first.nodeStates.d.status).toBe('skipped');
  });
});
