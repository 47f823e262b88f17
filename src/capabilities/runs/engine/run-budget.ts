import type { Breach } from './run-bounds';

/**
 * RFC 0084 spend budgets of a run: the reserved `configurable.budget` policy (budget-policy.schema.json),
 * checked at creation, and the content-free lifecycle the engine appends while cost accrues:
 * `budget.reserved` once at the run's start, `budget.consumed` at each reported cost, `budget.threshold.crossed`
 * once when the total reaches `thresholdPercent` of the limit, `budget.exhausted` when it reaches the limit, then
 * (hard enforcement) `cap.breached {kind: "budget-cost"}` and `run.failed` with `budget_exhausted`.
 *
 * Only the cost dimension is enforced (`capabilities.budget.dimensions: ["cost"]`): a policy naming another
 * dimension or a model list is refused at creation rather than silently not enforced.
 */

/** The budget dimensions this host enforces (advertised as `budget.dimensions`). */
export const BUDGET_DIMENSIONS = ['cost'] as const;
/** `thresholdPercent` when the policy names none. */
export const DEFAULT_THRESHOLD_PERCENT = 80;

const KNOWN = ['maxTokens', 'maxCostUsd', 'maxToolCalls', 'maxRetries', 'modelAllow', 'modelDeny', 'thresholdPercent', 'onExhaustion'];
const UNENFORCED = ['maxTokens', 'maxToolCalls', 'maxRetries', 'modelAllow', 'modelDeny'];

export interface Problem {
  field: string;
  message: string;
}

/** The problems of a `configurable.budget` value (empty: acceptable), `ceilingUsd` the host's `limits.maxBudgetCostUsd`. */
export function budgetPolicyProblems(v: unknown): Problem[] {
  if (v === undefined) return [];
  const f = (k: string) => `configurable.budget${k ? `.${k}` : ''}`;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return [{ field: f(''), message: 'must be an object (RFC 0084 BudgetPolicy)' }];
  const p = v as Record<string, unknown>;
  const problems: Problem[] = [];
  for (const k of Object.keys(p)) {
    if (!KNOWN.includes(k)) problems.push({ field: f(k), message: 'is not a BudgetPolicy field' });
    else if (UNENFORCED.includes(k)) problems.push({ field: f(k), message: 'is a budget dimension this host does not enforce (capabilities.budget.dimensions: ["cost"])' });
  }
  // Above the host ceiling is not refused: the effective budget is clamped to it (RFC 0084 §B), as budget.reserved shows.
  if (p.maxCostUsd !== undefined && (typeof p.maxCostUsd !== 'number' || !Number.isFinite(p.maxCostUsd) || p.maxCostUsd < 0)) {
    problems.push({ field: f('maxCostUsd'), message: 'must be a number of at least 0' });
  }
  if (p.thresholdPercent !== undefined && (typeof p.thresholdPercent !== 'number' || !(p.thresholdPercent >= 0 && p.thresholdPercent <= 100))) {
    problems.push({ field: f('thresholdPercent'), message: 'must be a number from 0 to 100' });
  }
  if (p.onExhaustion !== undefined && p.onExhaustion !== 'fail') {
    problems.push({ field: f('onExhaustion'), message: p.onExhaustion === 'interrupt' ? 'interrupt is not supported by this host (only fail)' : 'must be "fail" or "interrupt"' });
  }
  return problems;
}

/** An event the budget asks the engine to append (the engine numbers and writes it). */
export interface BudgetEvent {
  type: 'budget.reserved' | 'budget.consumed' | 'budget.threshold.crossed' | 'budget.exhausted';
  nodeId?: string;
  payload: Record<string, unknown>;
}

/** The breach that fails a run whose hard cost budget is exhausted. */
export const budgetBreach = (limit: number, observed: number, nodeId: string): Breach => ({
  kind: 'budget-cost',
  limit,
  observed,
  code: 'budget_exhausted',
  message: `The run's cost budget of ${limit} USD is exhausted (${observed} USD spent).`,
  nodeId,
});

/** One run's budget, resolved from its stored `configurable` (creation already refused a bad policy). */
export class RunBudget {
  private constructor(
    readonly maxCostUsd: number | undefined,
    readonly thresholdPercent: number,
  ) {}

  /** The run's budget, or nothing when its `configurable` carries no `budget` policy. */
  static of(configurable: Record<string, unknown> | null, ceilingUsd: number): RunBudget | undefined {
    const p = configurable?.budget;
    if (!p || typeof p !== 'object' || Array.isArray(p)) return undefined;
    const b = p as Record<string, unknown>;
    const max = typeof b.maxCostUsd === 'number' ? Math.min(b.maxCostUsd, ceilingUsd) : undefined;
    const pct = typeof b.thresholdPercent === 'number' ? b.thresholdPercent : DEFAULT_THRESHOLD_PERCENT;
    return new RunBudget(max, pct);
  }

  /** `budget.reserved`: the effective budget (the run's own policy, clamped to the host ceiling). */
  reserved(): BudgetEvent {
    return { type: 'budget.reserved', payload: { effectiveBudget: this.maxCostUsd === undefined ? {} : { maxCostUsd: this.maxCostUsd }, scope: 'run' } };
  }

  /**
   * The events of a cost going from `before` to `after` USD (reported by `nodeId`), and the breach when it exhausts
   * the budget. Crossings are computed from the totals, so a run resumed on another replica never repeats them.
   */
  charge(before: number, after: number, nodeId: string, emit?: (e: BudgetEvent) => void): Breach | undefined {
    const r = this.charged(before, after, nodeId);
    r.events.forEach((e) => emit?.(e));
    return r.breach;
  }

  /** What `charge` appends and answers, as values. */
  charged(before: number, after: number, nodeId: string): { events: BudgetEvent[]; breach?: Breach } {
    const limit = this.maxCostUsd;
    if (limit === undefined || !(after > before)) return { events: [] };
    const c = (type: BudgetEvent['type'], extra: Record<string, unknown> = {}): BudgetEvent => ({ type, nodeId, payload: { dimension: 'cost', consumed: after, limit, ...extra } });
    const events: BudgetEvent[] = [c('budget.consumed', { remaining: Math.max(0, limit - after) })];
    const threshold = (limit * this.thresholdPercent) / 100;
    if (before < threshold && after >= threshold) events.push(c('budget.threshold.crossed', { percent: this.thresholdPercent }));
    if (before < limit && after >= limit) {
      events.push(c('budget.exhausted'));
      return { events, breach: budgetBreach(limit, after, nodeId) };
    }
    return { events };
  }
}
