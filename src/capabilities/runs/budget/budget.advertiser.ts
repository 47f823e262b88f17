import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../../platform/discovery/capability-advertiser';
import { BUDGET_DIMENSIONS } from '../engine/run-budget';

/**
 * RFC 0084 `budget`: a run's `configurable.budget` policy is resolved (scope `run`, clamped to
 * `limits.maxBudgetCostUsd`), its `budget.*` events appended, and an exhausted cost budget stops the
 * run (`enforce: "hard"`). Only the cost dimension is enforced; a policy naming another is refused.
 */
@Injectable()
@Advertiser()
export class BudgetAdvertiser implements CapabilityAdvertiser {
  advertise(): Record<string, unknown> {
    return { budget: { supported: true, dimensions: [...BUDGET_DIMENSIONS], enforce: 'hard', scopes: ['run'] } };
  }
}
