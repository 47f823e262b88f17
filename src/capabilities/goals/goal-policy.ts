import type { GoalBounds, GoalEntity, GoalSchedule } from './goal.entity';
import type { GoalLimits } from './goals.settings';

/** cron-parser, loaded with the first cron schedule read (most hosts have none). */
const cron = () => (require('cron-parser') as typeof import('cron-parser')).CronExpressionParser;

/**
 * The pure rules of a standing goal: bounds (RFC 0058/0084) clamped to the host limits, when a goal
 * is next due, and which bound a goal has crossed. No I/O, so every rule is unit-tested directly.
 */

/** Declared bounds clamped to the host limits; an undeclared bound is the host limit itself. */
export function effectiveBounds(declared: GoalBounds, limits: GoalLimits): Required<GoalBounds> {
  return {
    maxLoopIterations: Math.min(declared.maxLoopIterations ?? limits.maxLoopIterations, limits.maxLoopIterations),
    runTimeoutMs: Math.min(declared.runTimeoutMs ?? limits.maxRunDurationMs, limits.maxRunDurationMs),
    maxCostUsd: Math.min(declared.maxCostUsd ?? limits.maxBudgetCostUsd, limits.maxBudgetCostUsd),
  };
}

/** A bounds object counts as declared when it carries at least one of the three numeric bounds. */
export function hasDeclaredBounds(bounds: unknown): boolean {
  if (!bounds || typeof bounds !== 'object' || Array.isArray(bounds)) return false;
  return ['maxLoopIterations', 'runTimeoutMs', 'maxCostUsd'].some((k) => (bounds as Record<string, unknown>)[k] !== undefined);
}

export function deadlineOf(createdAt: Date, bounds: GoalBounds): Date | null {
  return bounds.runTimeoutMs === undefined ? null : new Date(createdAt.getTime() + bounds.runTimeoutMs);
}

/** The first schedule slot strictly after `after` (a backlog collapses: slots are counted from now). */
export function nextSlot(schedule: GoalSchedule, after: Date): Date {
  if ('intervalMs' in schedule) return new Date(after.getTime() + schedule.intervalMs);
  const expr = cron().parse(schedule.cron, { currentDate: after, tz: schedule.timezone ?? 'UTC' });
  return expr.next().toDate();
}

/** Throws a readable message when a cron expression or timezone is invalid. */
export function checkSchedule(schedule: GoalSchedule): string | undefined {
  if ('intervalMs' in schedule) return undefined;
  try {
    cron().parse(schedule.cron, { tz: schedule.timezone ?? 'UTC', strict: false });
    if (schedule.timezone) new Intl.DateTimeFormat('en-US', { timeZone: schedule.timezone });
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

export type CrossedBound = 'run-timeout' | 'loop-iterations' | 'cost';

type BoundState = Pick<GoalEntity, 'bounds' | 'deadlineAt' | 'iterations' | 'costUsd'>;

/** `now - createdAt > runTimeoutMs`: strictly past the deadline. */
export function pastDeadline(goal: Pick<GoalEntity, 'deadlineAt'>, now: Date): boolean {
  return goal.deadlineAt !== null && now.getTime() > goal.deadlineAt.getTime();
}

/**
 * The bound that forbids starting (or judging) another iteration, if any. The iteration bound is
 * reached at `iterations >= max` (the Nth unsatisfied verdict already closed the goal); the cost
 * ceiling is crossed when the accumulated cost exceeds it.
 */
export function crossedBound(goal: BoundState, now: Date): CrossedBound | undefined {
  if (pastDeadline(goal, now)) return 'run-timeout';
  if (goal.bounds.maxCostUsd !== undefined && goal.costUsd > goal.bounds.maxCostUsd) return 'cost';
  if (goal.bounds.maxLoopIterations !== undefined && goal.iterations >= goal.bounds.maxLoopIterations) return 'loop-iterations';
  return undefined;
}

type DueState = Pick<GoalEntity, 'state' | 'paused' | 'continuationMode' | 'schedule' | 'deadlineAt' | 'dispatchKey' | 'pendingRunId'>;

export interface DueOptions {
  /** The scheduled slot of the next iteration (already computed), when one is armed. */
  slot?: Date | null;
  /** How soon to look at an in-flight run again. */
  pollMs: number;
}

/**
 * When the scheduler must look at the goal next: the armed slot (the next schedule slot or
 * heartbeat tick, or the commitment's instant; not while paused), a poll of the in-flight run, or
 * the deadline (checked even when no run reports and while paused). Null when nothing will happen
 * until a client acts.
 */
export function nextDueAt(goal: DueState, now: Date, opts: DueOptions): Date | null {
  if (goal.state !== 'active') return null;
  const candidates: number[] = [];
  // The deadline is crossed strictly after deadline_at.
  if (goal.deadlineAt) candidates.push(goal.deadlineAt.getTime() + 1);
  if (goal.pendingRunId || goal.dispatchKey) candidates.push(now.getTime() + opts.pollMs);
  else if (!goal.paused && goal.continuationMode !== 'manual' && opts.slot) candidates.push(opts.slot.getTime());
  return candidates.length ? new Date(Math.min(...candidates)) : null;
}
