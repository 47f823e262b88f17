import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { In, DataSource } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { HealthService } from '../../platform/health/health.service';
import { GoalClock } from './goal-clock';
import { GoalExtensionsService } from './goal-extensions.service';
import { GoalSchedulerMetrics } from './goal-scheduler.metrics';
import { crossedBound, nextDueAt } from './goal-policy';
import { GoalEntity } from './goal.entity';
import { GOALS_SETTINGS, GoalsSettings } from './goals.settings';
import { GoalsService } from './goals.service';

export interface SchedulerPassResult {
  /** Goals claimed (each at most once per pass). */
  claimed: number;
  /** Runs the workers were asked to start (new iterations, or a taken-over dispatch). */
  dispatched: number;
  /** Contributing runs recorded (judged or closed by a bound). */
  recorded: number;
  /** Goals closed by a bound the scheduler found crossed before any run reported. */
  closed: number;
  /** Goals whose claim was lost to another replica mid-way (nothing written). */
  fenced: number;
  failed: number;
}

export interface RunOnceOptions {
  /** The pass's clock reading (default: the goal clock). */
  now?: Date;
  signal?: AbortSignal;
  /** Claim at most this many goals in this pass (default: every due goal). */
  maxGoals?: number;
}

const TICKER = 'goals.continuation';

/**
 * The continuation scheduler of standing goals. Every replica ticks (OPENWOP_SCHEDULER_TICK_MS) and
 * claims due goals with `FOR UPDATE SKIP LOCKED` plus a lease (owner + expiry) on the goal rows, so
 * any number of replicas share the work and each iteration runs once: every later write is
 * conditional on still holding the lease, and a crashed replica's lease simply expires and another
 * replica resumes the same iteration (same idempotency key, same in-flight run). A goal due long ago
 * gets one catch-up iteration: the next slot is always counted from the time of the pass.
 */
@Injectable()
export class GoalSchedulerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('goals.scheduler');
  private readonly abort = new AbortController();
  private ticking?: Promise<SchedulerPassResult>;

  constructor(
    private readonly ds: DataSource,
    private readonly goals: GoalsService,
    private readonly extensions: GoalExtensionsService,
    private readonly clock: GoalClock,
    private readonly health: HealthService,
    private readonly registry: SchedulerRegistry,
    private readonly metrics: GoalSchedulerMetrics,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    @Inject(GOALS_SETTINGS) private readonly settings: GoalsSettings,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.schedulerEnabled) return;
    const timer = setInterval(() => void this.tick(), this.config.schedulerTickMs);
    timer.unref();
    this.registry.addInterval(TICKER, timer);
  }

  async onApplicationShutdown(): Promise<void> {
    this.abort.abort();
    try {
      this.registry.deleteInterval(TICKER);
    } catch {
      /* the ticker was not started */
    }
    await this.ticking?.catch(() => undefined);
  }

  /** One ticker pass; overlapping ticks are skipped (the running pass already covers them). */
  async tick(): Promise<SchedulerPassResult | undefined> {
    if (this.ticking) return undefined;
    this.ticking = this.runOnce({ signal: this.abort.signal }).finally(() => (this.ticking = undefined));
    try {
      return await this.ticking;
    } catch (e) {
      this.logger.error({ err: e }, 'goal scheduler pass failed');
      this.health.report('goals.scheduler', false, 'a scheduler pass failed');
      return undefined;
    }
  }

  /**
   * Claims and works every goal due at `now`, batch after batch. Each goal is handled at most once
   * per pass: after it, its next due time is later than `now` (or its lease outlives the pass).
   */
  async runOnce(opts: RunOnceOptions = {}): Promise<SchedulerPassResult> {
    const now = opts.now ?? (await this.clock.now());
    const signal = opts.signal ?? this.abort.signal;
    const owner = `${this.config.instanceId}:${randomUUID()}`;
    const result: SchedulerPassResult = { claimed: 0, dispatched: 0, recorded: 0, closed: 0, fenced: 0, failed: 0 };
    const limit = opts.maxGoals ?? Number.MAX_SAFE_INTEGER;
    while (!signal.aborted && result.claimed < limit) {
      const batch = await this.claim(now, owner, Math.min(this.settings.batchSize, limit - result.claimed));
      if (!batch.length) break;
      result.claimed += batch.length;
      this.metrics.claimedBatch(now, batch.map((g) => g.nextDueAt));
      await pool(batch, this.settings.concurrency, (g) => this.work(g, now, owner, signal, result));
    }
    this.metrics.passFinished(result);
    if (result.failed === 0) this.health.report('goals.scheduler', true);
    return result;
  }

  /** Claims up to `limit` due goals for `owner` until now + leaseMs (rows another replica holds are skipped). */
  private async claim(now: Date, owner: string, limit: number): Promise<GoalEntity[]> {
    const expires = new Date(now.getTime() + this.settings.leaseMs);
    const rows = (await this.ds.query(
      `WITH due AS (
         SELECT "id" FROM "goal"
         WHERE "state" = 'active' AND "next_due_at" <= $1 AND ("lease_expires_at" IS NULL OR "lease_expires_at" <= $1)
         ORDER BY "next_due_at"
         LIMIT $2
         FOR UPDATE SKIP LOCKED
       )
       UPDATE "goal" SET "lease_owner" = $3, "lease_expires_at" = $4 FROM due WHERE "goal"."id" = due."id"
       RETURNING "goal"."id"`,
      [now, limit, owner, expires],
    )) as [Array<{ id: string }>, number] | Array<{ id: string }>;
    const ids = (Array.isArray(rows[0]) ? rows[0] : rows) as Array<{ id: string }>;
    if (!ids.length) return [];
    return this.ds.getRepository(GoalEntity).find({ where: { id: In(ids.map((r) => r.id)), leaseOwner: owner } });
  }

  private async work(goal: GoalEntity, now: Date, owner: string, signal: AbortSignal, result: SchedulerPassResult): Promise<void> {
    try {
      // Bounds first, even when no run reports: a goal past its deadline closes now.
      if (crossedBound(goal, now)) {
        const closed = await this.ds.transaction(async (m) => {
          const g = await this.goals.lockGoal(m, goal, owner);
          if (!g || g.state !== 'active') return false;
          await this.goals.closeIn(m, g, 'bound-exceeded', now);
          return true;
        });
        if (closed) result.closed++;
        else result.fenced++;
        return;
      }
      const worker = goal.pendingRunId || goal.dispatchKey || (goal.continuationMode === 'schedule' && !goal.paused) ? this.extensions.worker(goal.worker) : undefined;
      const inFlight = Boolean(goal.pendingRunId || goal.dispatchKey);
      if (!inFlight && (goal.paused || goal.continuationMode !== 'schedule')) {
        // Nothing to start (paused, or manual): just re-arm the deadline check.
        await this.release(goal, owner, now, 'rearm');
        return;
      }
      if (!worker) {
        this.health.report('goals.scheduler', false, `goal worker "${goal.worker}" is not available`);
        result.failed++;
        await this.release(goal, owner, now, 'retry');
        return;
      }
      const subject = this.goals.subjectOf(goal);
      let runId = goal.pendingRunId;
      if (!runId) {
        // Dispatch: the idempotency key is persisted before the worker is asked, so a replica that
        // takes over after a crash asks again with the same key instead of starting a second run.
        let key = goal.dispatchKey;
        if (!key) {
          key = `${goal.id}:${goal.dispatchCount + 1}`;
          const set = await this.ds.query(
            `UPDATE "goal" SET "dispatch_key" = $1, "dispatch_count" = "dispatch_count" + 1
             WHERE "id" = $2 AND "lease_owner" = $3 AND "state" = 'active' AND NOT "paused" AND "continuation_mode" = 'schedule' AND "dispatch_key" IS NULL`,
            [key, goal.id, owner],
          );
          if (affected(set) !== 1) {
            // Paused, switched to manual or closed since the claim (or the claim was lost): start nothing.
            if (!(await this.release(goal, owner, now, 'rearm'))) result.fenced++;
            return;
          }
        }
        const started = await worker.start(subject, { idempotencyKey: key, signal });
        result.dispatched++;
        runId = started.runId;
        goal.dispatchKey = key;
      }
      const outcome = await worker.collect(subject, runId, signal);
      if (!outcome) {
        // Still running: remember the run (until now the dispatch key alone identified it) and poll later.
        if (!(await this.release(goal, owner, now, 'poll', runId))) result.fenced++;
        return;
      }
      const recorded = await this.goals.recordOutcome(goal, { ...outcome, runId }, { now, fence: owner, onNoVerdict: 'unsatisfied', known: goal });
      if (recorded.fenced) result.fenced++;
      else if (recorded.recorded) result.recorded++;
    } catch (e) {
      result.failed++;
      this.logger.warn({ goalId: goal.id, err: (e as Error).message }, 'goal iteration failed; retrying later');
      this.health.report('goals.scheduler', false, `a goal worker failed: ${(e as Error).name}`);
      await this.release(goal, owner, now, 'retry').catch(() => undefined);
    }
  }

  /** Gives the claim back with the goal's next due time, computed from the fresh row. False when the claim was lost. */
  private async release(goal: GoalEntity, owner: string, now: Date, why: 'rearm' | 'poll' | 'retry', pendingRunId?: string): Promise<boolean> {
    return this.ds.transaction(async (m) => {
      const g = await this.goals.lockGoal(m, goal, owner);
      if (!g) return false;
      if (pendingRunId && g.state === 'active') g.pendingRunId = pendingRunId;
      let due = nextDueAt(g, now, { slot: this.goals.armedSlot(g, now, false), pollMs: this.goals.pollMs(g) });
      if (why === 'retry' && g.state === 'active') {
        const retry = new Date(now.getTime() + this.settings.retryDelayMs);
        due = due && due < retry ? due : retry;
      }
      await m.getRepository(GoalEntity).update({ id: g.id, tenant: g.tenant }, { nextDueAt: due, pendingRunId: g.pendingRunId, leaseOwner: null, leaseExpiresAt: null });
      return true;
    });
  }
}

function affected(res: unknown): number {
  // pg through TypeORM answers [rows, count] for UPDATE.
  return Array.isArray(res) && typeof res[1] === 'number' ? res[1] : 0;
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  });
  await Promise.all(lanes);
}
