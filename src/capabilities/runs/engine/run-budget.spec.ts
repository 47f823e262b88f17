import { budgetPolicyProblems, RunBudget } from './run-budget';

describe('RFC 0084 run budgets', () => {
  it('accepts a cost policy and refuses what it would not enforce', () => {
    expect(budgetPolicyProblems(undefined)).toEqual([]);
    expect(budgetPolicyProblems({ maxCostUsd: 2, thresholdPercent: 90, onExhaustion: 'fail' })).toEqual([]);
    expect(budgetPolicyProblems({ maxCostUsd: -1, modelDeny: ['x'], thresholdPercent: 101 }).map((p) => p.field)).toEqual([
      'configurable.budget.modelDeny',
      'configurable.budget.maxCostUsd',
      'configurable.budget.thresholdPercent',
    ]);
    expect(budgetPolicyProblems([])).toHaveLength(1);
  });

  it('is absent without a policy and clamps to the host ceiling', () => {
    expect(RunBudget.of({ maxCostUsd: 1 }, 100)).toBeUndefined();
    expect(RunBudget.of({ budget: { maxCostUsd: 500 } }, 100)!.reserved().payload).toEqual({ effectiveBudget: { maxCostUsd: 100 }, scope: 'run' });
    expect(RunBudget.of({ budget: {} }, 100)!.reserved().payload).toEqual({ effectiveBudget: {}, scope: 'run' });
  });

  it('crosses the threshold once and exhausts at the limit', () => {
    const b = RunBudget.of({ budget: { maxCostUsd: 1 } }, 100)!;
    expect(b.charged(0, 0.5, 'a').events.map((e) => e.type)).toEqual(['budget.consumed']);
    const crossed = b.charged(0.5, 0.8, 'b');
    expect(crossed.events.map((e) => e.type)).toEqual(['budget.consumed', 'budget.threshold.crossed']);
    expect(crossed.breach).toBeUndefined();
    expect(b.charged(0.8, 0.9, 'c').events.map((e) => e.type)).toEqual(['budget.consumed']);
    const out = b.charged(0.9, 1, 'd');
    expect(out.events.map((e) => e.type)).toEqual(['budget.consumed', 'budget.exhausted']);
    expect(out.breach).toMatchObject({ kind: 'budget-cost', code: 'budget_exhausted', limit: 1, observed: 1, nodeId: 'd' });
    // Nothing after the limit is crossed again; a policy without maxCostUsd tracks nothing.
    expect(b.charged(1, 2, 'e').breach).toBeUndefined();
    expect(RunBudget.of({ budget: { thresholdPercent: 10 } }, 100)!.charged(0, 5, 'x').events).toEqual([]);
    const emitted: string[] = [];
    expect(b.charge(0, 3, 'y', (e) => emitted.push(e.type))).toMatchObject({ code: 'budget_exhausted' });
    expect(emitted).toEqual(['budget.consumed', 'budget.threshold.crossed', 'budget.exhausted']);
  });
});
