/**
 * RFC 0084 budgets on the run engine: a run's `configurable.budget` policy checked at creation, its
 * content-free `budget.*` lifecycle in the run's log, hard enforcement (`cap.breached {kind: "budget-cost"}`
 * then `run.failed` with `budget_exhausted`), the advertisement and the budget seam.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { expectSchemaValid, installChains, runEvents, waitForStatus } from './run-kit';

const spend = (id: string, usd: number) => ({ id, typeId: 'core.conformance.cost', config: { usd } });

describe('runs: RFC 0084 budgets', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    key = await t.key({ scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'default', 'vendor.test.budget-chains', {
      'vendor.test.spend3': { nodes: [spend('a', 0.25), spend('b', 0.25), spend('c', 0.25), { id: 'after', typeId: 'core.noop' }], edges: [{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }, { from: 'c', to: 'after' }] },
      'vendor.test.spend-big': { nodes: [spend('big', 5), { id: 'after', typeId: 'core.noop' }], edges: [{ from: 'big', to: 'after' }] },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('advertises a hard cost budget for runs', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.budget).toEqual({ supported: true, dimensions: ['cost'], enforce: 'hard', scopes: ['run'] });
  });

  it('refuses a policy it would not enforce, with every problem, and writes nothing', async () => {
    const bad = await t.http('POST', '/v1/runs', {
      token: key,
      body: { workflowId: 'vendor.test.spend3', configurable: { budget: { maxTokens: 10, maxCostUsd: -1, onExhaustion: 'interrupt', nope: 1 } } },
    });
    expect([bad.status, bad.body.error]).toEqual([400, 'validation_error']);
    expect(bad.body.details.problems.map((p: { field: string }) => p.field).sort()).toEqual(
      ['configurable.budget.maxCostUsd', 'configurable.budget.maxTokens', 'configurable.budget.nope', 'configurable.budget.onExhaustion'],
    );
    const notObject = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.spend3', configurable: { budget: 3 } } });
    expect(notObject.status).toBe(400);
    // Above the host ceiling (limits.maxBudgetCostUsd, 100) is clamped, not refused.
    const big = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.spend3', configurable: { budget: { maxCostUsd: 1e9 } } } });
    expect(big.status).toBe(201);
    await waitForStatus(t, key, big.body.runId, ['completed']);
    expect((await runEvents(t, key, big.body.runId)).find((e) => e.type === 'budget.reserved')!.payload).toEqual({ effectiveBudget: { maxCostUsd: 100 }, scope: 'run' });
  });

  it('appends reserved, consumed, threshold.crossed and exhausted, then fails the run budget_exhausted', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.spend3', configurable: { budget: { maxCostUsd: 0.75, thresholdPercent: 50 } } } });
    expect(r.status).toBe(201);
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
    expect([done.status, done.error?.code]).toEqual(['failed', 'budget_exhausted']);
    const events = await runEvents(t, key, r.body.runId);
    expectSchemaValid(events);
    const budget = events.filter((e) => e.type.startsWith('budget.') || e.type === 'cap.breached' || e.type === 'run.failed');
    expect(budget.map((e) => [e.type, e.payload.consumed ?? null])).toEqual([
      ['budget.reserved', null],
      ['budget.consumed', 0.25],
      ['budget.consumed', 0.5],
      ['budget.threshold.crossed', 0.5],
      ['budget.consumed', 0.75],
      ['budget.exhausted', 0.75],
      ['cap.breached', null],
      ['run.failed', null],
    ]);
    expect(budget[0].payload).toEqual({ effectiveBudget: { maxCostUsd: 0.75 }, scope: 'run' });
    expect(budget[3].payload).toEqual({ dimension: 'cost', consumed: 0.5, limit: 0.75, percent: 50 });
    expect(budget[6].payload).toMatchObject({ kind: 'budget-cost', limit: 0.75, observed: 0.75, nodeId: 'c' });
    expect((budget[7].payload.error as { code: string }).code).toBe('budget_exhausted');
    expect(done.nodeStates.after.status).toBe('skipped');
    expect(done.metrics.openwopCost.usd).toBeCloseTo(0.75, 9);
  });

  it('lets a run under its budget complete, and clamps a budget to the host ceiling', async () => {
    const ok = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.spend3', configurable: { budget: { maxCostUsd: 1 } } } });
    const fine = await waitForStatus(t, key, ok.body.runId, ['completed', 'failed']);
    expect(fine.status).toBe('completed');
    const events = await runEvents(t, key, ok.body.runId);
    expectSchemaValid(events);
    expect(events.filter((e) => e.type === 'budget.consumed')).toHaveLength(3);
    // 0.75 of 1 USD: the default 80 % threshold is not reached.
    expect(events.some((e) => e.type === 'budget.threshold.crossed' || e.type === 'budget.exhausted' || e.type === 'cap.breached')).toBe(false);

    // One step jumping past both the threshold and the limit: both events, in order.
    const big = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.spend-big', configurable: { budget: { maxCostUsd: 2 } } } });
    const failed = await waitForStatus(t, key, big.body.runId, ['completed', 'failed']);
    expect(failed.error?.code).toBe('budget_exhausted');
    const types = (await runEvents(t, key, big.body.runId)).map((e) => e.type);
    expect(types.indexOf('budget.threshold.crossed')).toBeLessThan(types.indexOf('budget.exhausted'));
    expect(types.indexOf('budget.exhausted')).toBeLessThan(types.indexOf('cap.breached'));
  });

  it('a run without a budget policy writes no budget events (the RFC 0058 maxCostUsd keeps cost_limit)', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.spend3', configurable: { maxCostUsd: 0.6 } } });
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
    expect(done.error?.code).toBe('cost_limit');
    expect((await runEvents(t, key, r.body.runId)).some((e) => e.type.startsWith('budget.'))).toBe(false);
  });

  it('the budget seam runs the fixture to exhaustion and refuses what is not enforced', async () => {
    const r = await t.http('POST', '/v1/host/sample/budget/run', { token: key, body: { scenario: 'hard-cost-exhaust' } });
    expect([r.status, r.body.outcome]).toEqual([200, 'failed']);
    const seen = await t.http('GET', `/v1/host/sample/test/runs/${r.body.runId}/events`, { token: key });
    const types = seen.body.events.map((e: { type: string }) => e.type);
    expect(types.filter((x: string) => x.startsWith('budget.') || x === 'cap.breached' || x === 'run.failed')).toEqual(
      ['budget.reserved', 'budget.consumed', 'budget.consumed', 'budget.consumed', 'budget.threshold.crossed', 'budget.consumed', 'budget.exhausted', 'cap.breached', 'run.failed'],
    );
    const denied = await t.http('POST', '/v1/host/sample/budget/run', { token: key, body: { scenario: 'model-denied' } });
    expect([denied.status, denied.body.error]).toEqual([501, 'not_implemented']);
    const unknown = await t.http('POST', '/v1/host/sample/budget/run', { token: key, body: { scenario: 'nope' } });
    expect(unknown.status).toBe(400);
  });
});
