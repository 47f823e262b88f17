import type { GoalRunOutcome, GoalWorkerProvider, GoalWorkerStartContext, GoalWorkSubject } from '@openwop-host/plugin-sdk';
import { GoalClock } from '../../src/capabilities/goals/goal-clock';
import { GoalExtensionsService } from '../../src/capabilities/goals/goal-extensions.service';
import { GoalSchedulerService } from '../../src/capabilities/goals/goal-scheduler.service';
import type { TestApp } from '../support/test-app';

/** A clock the test moves by hand; the scheduler and the API read it through GoalClock. */
export class ManualClock {
  constructor(private ms = Date.parse('2026-06-13T00:00:00.000Z')) {}
  now = (): Date => new Date(this.ms);
  advance(ms: number): Date {
    this.ms += ms;
    return this.now();
  }
}

export interface FakeRunPlan {
  output?: unknown;
  costUsd?: number;
  status?: string;
  /** Still running: collect answers undefined. */
  running?: boolean;
  /** Waiting on an RFC 0044 confidence escalation. */
  escalated?: boolean;
}

/**
 * A goal worker that behaves like an OpenWOP runtime honouring idempotency keys: one run per key,
 * however often `start` is called with it. `plan` decides each run's outcome.
 */
export class FakeWorker implements GoalWorkerProvider {
  readonly pollIntervalMs = 100;
  /** Every start call, in order (a key twice = a retried dispatch). */
  readonly startCalls: string[] = [];
  /** key → runId: the runs this "runtime" actually created. */
  readonly runsByKey = new Map<string, string>();
  readonly goalOfRun = new Map<string, GoalWorkSubject>();
  collectCalls = 0;
  /** When set, `start` waits on it after creating the run (simulates a replica that hangs or dies). */
  hold?: (key: string) => Promise<void>;

  constructor(public plan: (goal: GoalWorkSubject, runId: string) => FakeRunPlan = () => ({ output: { green: false } })) {}

  async start(goal: GoalWorkSubject, ctx: GoalWorkerStartContext): Promise<{ runId: string }> {
    this.startCalls.push(ctx.idempotencyKey);
    let runId = this.runsByKey.get(ctx.idempotencyKey);
    if (!runId) {
      runId = `run-${this.runsByKey.size + 1}-${goal.goalId.slice(0, 8)}`;
      this.runsByKey.set(ctx.idempotencyKey, runId);
      this.goalOfRun.set(runId, goal);
    }
    if (this.hold) await this.hold(ctx.idempotencyKey);
    return { runId };
  }

  async collect(_goal: GoalWorkSubject, runId: string): Promise<GoalRunOutcome | undefined> {
    this.collectCalls++;
    const goal = this.goalOfRun.get(runId)!;
    const p = this.plan(goal, runId);
    if (p.running) return undefined;
    return { runId, status: p.status ?? 'completed', output: p.output, costUsd: p.costUsd, escalated: p.escalated };
  }

  /**
   * The same runtime seen through another replica's worker whose `start` hangs after the runtime
   * received the request (the replica dies mid-tick): `release()` lets the hung calls continue.
   */
  hangingView(): { worker: GoalWorkerProvider; hung: () => number; release: () => void } {
    let hung = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const worker: GoalWorkerProvider = {
      pollIntervalMs: this.pollIntervalMs,
      start: async (goal, ctx) => {
        const started = await this.start(goal, { ...ctx });
        hung++;
        await gate;
        return started;
      },
      collect: (goal, runId) => this.collect(goal, runId),
    };
    return { worker, hung: () => hung, release };
  }

  runsOf(goalId: string): string[] {
    return [...this.goalOfRun.entries()].filter(([, g]) => g.goalId === goalId).map(([r]) => r);
  }
}

/** Installs a manual clock and a fake worker (id `fake`) in a test host. */
export function instrument(t: TestApp, clock: ManualClock, worker: FakeWorker, id = 'fake') {
  t.moduleRef.get(GoalClock).useSource(clock.now);
  t.moduleRef.get(GoalExtensionsService).registerWorker(id, worker);
  const scheduler = t.moduleRef.get(GoalSchedulerService);
  return { scheduler, tick: () => scheduler.runOnce({ now: clock.now() }) };
}

export const CRITERIA = { type: 'object', required: ['green'], properties: { green: { const: true } } };

export function goalBody(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    objective: 'keep the release checklist green',
    completion: { check: 'host' },
    criteria: CRITERIA,
    continuation: { mode: 'schedule' },
    schedule: { intervalMs: 1000 },
    bounds: { maxLoopIterations: 5 },
    ...over,
  };
}
