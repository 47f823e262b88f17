import { checkSchedule, crossedBound, deadlineOf, effectiveBounds, hasDeclaredBounds, nextDueAt, nextSlot, pastDeadline } from './goal-policy';
import type { GoalEntity } from './goal.entity';

const limits = { maxLoopIterations: 50, maxRunDurationMs: 3_600_000, maxBudgetCostUsd: 10 };
const t0 = new Date('2026-06-13T00:00:00.000Z');
const at = (ms: number) => new Date(t0.getTime() + ms);

describe('goal bounds', () => {
  it('clamps declared bounds to the host limits and fills undeclared ones with the limits', () => {
    expect(effectiveBounds({ maxLoopIterations: 500, maxCostUsd: 2 }, limits)).toEqual({ maxLoopIterations: 50, runTimeoutMs: 3_600_000, maxCostUsd: 2 });
    expect(effectiveBounds({ runTimeoutMs: 0 }, limits)).toEqual({ maxLoopIterations: 50, runTimeoutMs: 0, maxCostUsd: 10 });
  });

  it('counts bounds as declared only with at least one numeric bound', () => {
    expect(hasDeclaredBounds(undefined)).toBe(false);
    expect(hasDeclaredBounds(null)).toBe(false);
    expect(hasDeclaredBounds({})).toBe(false);
    expect(hasDeclaredBounds([])).toBe(false);
    expect(hasDeclaredBounds('7')).toBe(false);
    expect(hasDeclaredBounds({ maxLoopIterations: 7 })).toBe(true);
    expect(hasDeclaredBounds({ maxCostUsd: 0 })).toBe(true);
  });

  it('is past the deadline only strictly after createdAt + runTimeoutMs', () => {
    const deadlineAt = deadlineOf(t0, { runTimeoutMs: 1000 });
    expect(deadlineAt).toEqual(at(1000));
    expect(pastDeadline({ deadlineAt }, at(1000))).toBe(false);
    expect(pastDeadline({ deadlineAt }, at(1001))).toBe(true);
    expect(pastDeadline({ deadlineAt: null }, at(10 ** 12))).toBe(false);
  });

  it('names the bound that forbids another iteration', () => {
    const base = { bounds: { maxLoopIterations: 3, maxCostUsd: 1, runTimeoutMs: 1000 }, deadlineAt: at(1000), iterations: 0, costUsd: 0 };
    expect(crossedBound(base, at(10))).toBeUndefined();
    expect(crossedBound({ ...base, iterations: 2 }, at(10))).toBeUndefined();
    expect(crossedBound({ ...base, iterations: 3 }, at(10))).toBe('loop-iterations');
    expect(crossedBound({ ...base, costUsd: 1 }, at(10))).toBeUndefined();
    expect(crossedBound({ ...base, costUsd: 1.01 }, at(10))).toBe('cost');
    expect(crossedBound(base, at(1001))).toBe('run-timeout');
  });
});

describe('goal schedule', () => {
  it('counts the next interval slot from the given time, so a backlog collapses into one slot', () => {
    expect(nextSlot({ intervalMs: 1000 }, at(0))).toEqual(at(1000));
    expect(nextSlot({ intervalMs: 1000 }, at(86_400_000))).toEqual(at(86_401_000));
  });

  it('finds the next cron slot strictly after the given time, in the given timezone', () => {
    expect(nextSlot({ cron: '*/5 * * * *' }, new Date('2026-01-01T00:01:00Z')).toISOString()).toBe('2026-01-01T00:05:00.000Z');
    expect(nextSlot({ cron: '0 9 * * *', timezone: 'Europe/Berlin' }, new Date('2026-01-01T00:00:00Z')).toISOString()).toBe('2026-01-01T08:00:00.000Z');
  });

  it('reports an invalid cron expression or timezone', () => {
    expect(checkSchedule({ cron: '*/5 * * * *' })).toBeUndefined();
    expect(checkSchedule({ cron: 'every tuesday' })).toEqual(expect.any(String));
    expect(checkSchedule({ cron: '* * * * *', timezone: 'Mars/Olympus' })).toEqual(expect.any(String));
  });

  const goal = (over: Partial<GoalEntity>) =>
    ({ state: 'active', paused: false, continuationMode: 'schedule', schedule: { intervalMs: 1000 }, deadlineAt: null, dispatchKey: null, pendingRunId: null, ...over }) as GoalEntity;

  it('is due at the next slot, or sooner at the deadline', () => {
    expect(nextDueAt(goal({}), at(0), { slot: at(1000), pollMs: 100 })).toEqual(at(1000));
    expect(nextDueAt(goal({ deadlineAt: at(500) }), at(0), { slot: at(1000), pollMs: 100 })).toEqual(at(501));
  });

  it('polls an in-flight run, even while paused', () => {
    expect(nextDueAt(goal({ pendingRunId: 'r1' }), at(0), { slot: at(1000), pollMs: 100 })).toEqual(at(100));
    expect(nextDueAt(goal({ dispatchKey: 'k', paused: true }), at(0), { slot: null, pollMs: 100 })).toEqual(at(100));
  });

  it('arms nothing while paused or manual except the deadline, and nothing once closed', () => {
    expect(nextDueAt(goal({ paused: true }), at(0), { slot: at(1000), pollMs: 100 })).toBeNull();
    expect(nextDueAt(goal({ paused: true, deadlineAt: at(5000) }), at(0), { slot: at(1000), pollMs: 100 })).toEqual(at(5001));
    expect(nextDueAt(goal({ continuationMode: 'manual' }), at(0), { slot: at(1000), pollMs: 100 })).toBeNull();
    expect(nextDueAt(goal({ state: 'satisfied', deadlineAt: at(5000) }), at(0), { slot: at(1000), pollMs: 100 })).toBeNull();
  });
});
