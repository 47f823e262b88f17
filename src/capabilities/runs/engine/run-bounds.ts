import type { RunsSettings } from '../runs.settings';
import type { BatchEvent } from '../../../platform/events/event-log.service';
import { RunBudget } from './run-budget';

/**
 * A run's RFC 0058 bounds (run duration, loop iterations, budget cost): what they resolve to, the
 * breach that fails the run when one is crossed, and the watch on its duration.
 */

/** The resolved RFC 0058 bounds of a run (stored in `configurable`). */
export interface RunBounds {
  runTimeoutMs: number;
  maxLoopIterations: number;
  maxCostUsd: number;
  /** The RFC 0084 `configurable.budget` policy, when the run has one (run-budget.ts). */
  budget?: RunBudget;
}

/** The RFC 0058 bounds of a run: its `configurable` values, else the advertised limits. */
export function runBounds(c: Record<string, unknown> | null, limits: RunsSettings['limits']): RunBounds {
  const v = c ?? {};
  return {
    runTimeoutMs: typeof v.runTimeoutMs === 'number' ? v.runTimeoutMs : limits.maxRunDurationMs,
    maxLoopIterations: typeof v.maxLoopIterations === 'number' ? v.maxLoopIterations : limits.maxLoopIterations,
    maxCostUsd: typeof v.maxCostUsd === 'number' ? v.maxCostUsd : limits.maxBudgetCostUsd,
    budget: RunBudget.of(c, limits.maxBudgetCostUsd),
  };
}

/** A crossed bound (`cap.breached`) and the error that fails the run. */
export interface Breach {
  kind: 'run-duration' | 'loop-iterations' | 'budget-cost';
  limit: number;
  observed: number;
  code: string;
  message: string;
  nodeId?: string;
  /** The event that records the breach, when it is not `cap.breached` (a loop-back bound: `workflow.loopback-limit`). */
  event?: BatchEvent;
}

export const loopBreach = (limit: number, observed: number, nodeId: string): Breach => ({ kind: 'loop-iterations', limit, observed, code: 'loop_limit', message: `The run would execute more than ${limit} nodes.`, nodeId });
export const costBreach = (limit: number, observed: number, nodeId: string): Breach => ({ kind: 'budget-cost', limit, observed, code: 'cost_limit', message: `The run cost ${observed} USD, over its ${limit} USD bound.`, nodeId });
export const durationBreach = (limit: number, observed: number): Breach => ({ kind: 'run-duration', limit, observed, code: 'run_timeout', message: `The run exceeded its ${limit} ms duration bound.` });

/**
 * RFC 0058 run-duration: `onBreach` once the time elapsed since `startedAtMs` is strictly greater
 * than `limitMs` (checked when it can first be, not polled). Answers how to stop watching.
 */
export function watchRunDuration(limitMs: number, startedAtMs: number, onBreach: (b: Breach) => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  const check = () => {
    const elapsed = Date.now() - startedAtMs;
    if (elapsed <= limitMs) {
      timer = setTimeout(check, limitMs - elapsed + 1);
      return;
    }
    onBreach(durationBreach(limitMs, elapsed));
  };
  check();
  return () => clearTimeout(timer);
}
