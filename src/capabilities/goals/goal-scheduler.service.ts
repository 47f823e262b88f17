import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { HealthService } from '../../platform/health/health.service';
import { GoalClock, GoalLease } from './goal-clock';
import { ContinuationIntent, ContinuationItem, ContinuationResult, GoalContinuationService } from './goal-continuation.service';
import { GoalExtensionsService } from './goal-extensions.service';
import { crossedBound } from './goal-policy';
import { hydrateGoals, rowsOf } from './goal-rows';
import { GoalEntity } from './goal.entity';
import { GOALS_SETTINGS, GoalsSettings } from './goals.settings';

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

/** SQL: the claimed goal's arm asks for a new run (nothing in flight; schedule continuation, not paused). */
const WANTS_RUN_SQL = `(g."pending_run_id" IS NULL AND g."dispatch_key" IS NULL AND g."continuation_mode" = 'schedule' AND NOT g."paused")`;

/**
 * The continuation scheduler of standing goals. Every replica ticks (OPENWOP_SCHEDULER_TICK_MS) and
 * claims due goals with `FOR UPDATE SKIP LOCKED` plus a lease (owner + expiry) on the goal rows, so
 * any number of replicas share the work and each iteration runs once: every later write is
 * conditional on still holding the lease, and a crashed replica's lease simply expires and another
 * replica resumes the same iteration (same idempotency key, same in-flight run). A goal due long ago
 * gets one catch-up iteration: the next slot is always counted from the time of the pass.
 *
 * A pass costs a fixed number of statements per claimed batch, not per goal: one claim that returns
 * the rows and reserves their idempotency keys, and the continuation step (one read, one transaction)
 * that records every outcome, re-arms every goal and appends every event of the batch.
 */
@Injectable()
export class GoalSchedulerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('goals.scheduler');
  private readonly abort = new AbortController();
  private ticking?: Promise<SchedulerPassResult>;

  constructor(
    private readonly ds: DataSource,
    private readonly continuation: GoalContinuationService,
    private readonly extensions: GoalExtensionsService,
    private readonly clock: GoalClock,
    private readonly health: HealthService,
    private readonly registry: SchedulerRegistry,
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
    // Every claim of this pass expires at now + leaseMs, counted from here.
    const lease = this.clock.lease(now, this.settings.leaseMs);
    const signal = opts.signal ?? this.abort.signal;
    const owner = `${this.config.instanceId}:${randomUUID()}`;
    const result: SchedulerPassResult = { claimed: 0, dispatched: 0, recorded: 0, closed: 0, fenced: 0, failed: 0 };
    const limit = opts.maxGoals ?? Number.MAX_SAFE_INTEGER;
    while (!signal.aborted && result.claimed < limit) {
      const batch = await this.claim(now, owner, Math.min(this.settings.batchSize, limit - result.claimed));
      if (!batch.length) break;
      result.claimed += batch.length;
      const items = await this.dispatch(batch, now, lease, signal, result);
      let settled: ContinuationResult[];
      try {
        settled = await this.continuation.settle(items, { now, fence: owner, onNoVerdict: 'unsatisfied' });
      } catch (e) {
        // Nothing of the batch was written: its claims expire and another pass resumes the same iterations.
        result.failed += batch.length;
        this.logger.warn({ err: (e as Error).message }, 'recording a goal batch failed; its iterations are retried after the lease');
        this.health.report('goals.scheduler', false, `recording a goal batch failed: ${(e as Error).name}`);
        continue;
      }
      for (const r of settled) {
        if (r.status === 'recorded') result.recorded++;
        else if (r.status === 'closed') result.closed++;
        else if (r.status === 'fenced') result.fenced++;
      }
    }
    if (result.failed === 0) this.health.report('goals.scheduler', true);
    return result;
  }

  /**
   * Claims up to `limit` due goals for `owner` until now + leaseMs and returns them whole, in one
   * statement (rows another replica holds are skipped). The same statement reserves the next
   * idempotency key of every claimed goal whose arm asks for a new run, so the key is persisted
   * before any worker is asked: a replica that takes over after a crash asks again with the same
   * key instead of starting a second run.
   */
  private async claim(now: Date, owner: string, limit: number): Promise<GoalEntity[]> {
    const expires = new Date(now.getTime() + this.settings.leaseMs);
    const raw = rowsOf<Record<string, unknown>>(
      await this.ds.query(
        `WITH due AS (
           SELECT "id" FROM "goal"
           WHERE "state" = 'active' AND "next_due_at" <= $1 AND ("lease_expires_at" IS NULL OR "lease_expires_at" <= $1)
           ORDER BY "next_due_at"
           LIMIT $2
           FOR UPDATE SKIP LOCKED
         )
         UPDATE "goal" g SET "lease_owner" = $3, "lease_expires_at" = $4,
           "dispatch_key" = CASE WHEN ${WANTS_RUN_SQL} THEN g."id"::text || ':' || (g."dispatch_count" + 1) ELSE g."dispatch_key" END,
           "dispatch_count" = CASE WHEN ${WANTS_RUN_SQL} THEN g."dispatch_count" + 1 ELSE g."dispatch_count" END
         FROM due WHERE g."id" = due."id"
         RETURNING g.*`,
        [now, limit, owner, expires],
      ),
    );
    // Oldest due first, as claimed.
    return hydrateGoals(this.ds, raw).sort((a, b) => (a.nextDueAt?.getTime() ?? 0) - (b.nextDueAt?.getTime() ?? 0));
  }

  /**
   * Works a claimed batch up to the continuation step: which goals close at a bound, which have
   * nothing to start, and for the others the worker's start/collect, in lanes (settings.concurrency).
   * Before each start the lane checks that the claim still holds by the goal clock (with a margin),
   * so a replica that stalled past its lease starts nothing more once it wakes up; every write after
   * that is fenced in the database anyway.
   */
  private async dispatch(batch: GoalEntity[], now: Date, lease: GoalLease, signal: AbortSignal, result: SchedulerPassResult): Promise<ContinuationItem[]> {
    const items: ContinuationItem[] = batch.map((goal) => ({ goal, intent: { kind: 'rearm' } }));
    await pool(batch.map((_, i) => i), Math.max(1, this.settings.concurrency), async (i) => {
      items[i].intent = await this.iterate(batch[i], now, signal, result, lease);
    });
    return items;
  }

  /** One goal's iteration up to the continuation step. */
  private async iterate(goal: GoalEntity, now: Date, signal: AbortSignal, result: SchedulerPassResult, lease: GoalLease): Promise<ContinuationIntent> {
    try {
      // Bounds first, even when no run reports: a goal past its deadline closes now.
      if (crossedBound(goal, now)) return { kind: 'close-bound' };
      // Nothing in flight and nothing reserved by the claim: paused, manual or not armed.
      if (!goal.pendingRunId && !goal.dispatchKey) return { kind: 'rearm' };
      const worker = this.extensions.worker(goal.worker);
      if (!worker) {
        this.health.report('goals.scheduler', false, `goal worker "${goal.worker}" is not available`);
        result.failed++;
        return { kind: 'retry' };
      }
      const subject = this.continuation.subjectOf(goal);
      let runId = goal.pendingRunId;
      if (!runId) {
        // The claim ran out while this replica was busy or stalled: another replica owns the goal now.
        if (!(await lease.held())) return { kind: 'rearm' };
        const started = await worker.start(subject, { idempotencyKey: goal.dispatchKey!, signal });
        result.dispatched++;
        runId = started.runId;
      }
      const outcome = await worker.collect(subject, runId, signal);
      // Still running: remember the run (until now the dispatch key alone identified it) and poll later.
      if (!outcome) return { kind: 'poll', runId };
      return { kind: 'record', outcome: { ...outcome, runId } };
    } catch (e) {
      result.failed++;
      this.logger.warn({ goalId: goal.id, err: (e as Error).message }, 'goal iteration failed; retrying later');
      this.health.report('goals.scheduler', false, `a goal worker failed: ${(e as Error).name}`);
      return { kind: 'retry' };
    }
  }
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  });
  await Promise.all(lanes);
}
