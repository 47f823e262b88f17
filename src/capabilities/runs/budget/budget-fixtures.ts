/** The budget the seam's `hard-cost-exhaust` run carries: four 0.3 USD steps against 1 USD, threshold at 80 %. */
export const HARD_COST_BUDGET = { maxCostUsd: 1, thresholdPercent: 80 };

/**
 * The budget fixture (served while the test seams are on): four steps reporting 0.3 USD each, then a
 * noop. Under the seam's 1 USD budget the third crosses 80 % and the fourth exhausts it (1.2 USD).
 */
export const BUDGET_FIXTURES: Record<string, Record<string, unknown>> = {
  'conformance-budget-cost': {
    nodes: [
      { id: 'spend-1', typeId: 'core.conformance.cost', config: { usd: 0.3 } },
      { id: 'spend-2', typeId: 'core.conformance.cost', config: { usd: 0.3 } },
      { id: 'spend-3', typeId: 'core.conformance.cost', config: { usd: 0.3 } },
      { id: 'spend-4', typeId: 'core.conformance.cost', config: { usd: 0.3 } },
      { id: 'after', typeId: 'core.noop', config: {} },
    ],
    edges: [
      { from: 'spend-1', to: 'spend-2' },
      { from: 'spend-2', to: 'spend-3' },
      { from: 'spend-3', to: 'spend-4' },
      { from: 'spend-4', to: 'after' },
    ],
  },
};
