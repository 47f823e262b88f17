import { CoreConformanceCostExecutor } from '../executors/core-conformance-cost.executor';
import { BudgetAdvertiser } from './budget.advertiser';
import { BudgetSeamController } from './budget-seam.controller';

/** RFC 0084 budgets: the advertisement, the budget seam and its cost-reporting fixture node (registered by RunsModule). */
export const BUDGET_CONTROLLERS = [BudgetSeamController];
export const BUDGET_PROVIDERS = [BudgetAdvertiser, CoreConformanceCostExecutor];
