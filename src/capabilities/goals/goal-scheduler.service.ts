import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { GoalWorkerProvider, GoalWorkSubject } from '@openwop-host/plugin-sdk';
import canonicalize from 'canonicalize';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { HealthService } from '../../platform/health/health.service';
import { HeldLease, LeaseKeeper, LeaseStore } from '../../platform/leases/lease-keeper';
import { leaseOwnerId } from '../../platform/leases/lease-owner';
import type { LocalTaskHandle } from '../../platform/scheduler/local-task';
import { PeriodicTaskService } from '../../platform/scheduler/periodic-task.service';
import { GoalSchedulerMetrics } from './goal-scheduler.metrics';
import { GoalClock } from './goal-clock';
import { ContinuationIntent, ContinuationItem, ContinuationResult, GoalContinuationService } from './goal-continuation.service';
import { GoalWorkerSelector } from './goal-worker-selector.service';
import { crossedBound } from './goal-policy';
import { GoalStore } from './goal-store';
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

/**
 * A pass's claims are never renewed: renewing (or sharing an owner between passes) would let a pass
 * that stalled keep claims it can no longer act on in time. Its keeper only watches the expiry.
 */
const NEVER_RENEWED: LeaseStore<string> = {
  renew: async () => new Map(),
};

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
  /** Every pass's lease, keyed by the pass's owner id; stopped on shutdown, which aborts the passes. */
  private readonly passes: LeaseKeeper<string>;
  private ticking?: Promise<SchedulerPassResult>;
  private ticker?: LocalTaskHandle;

  constructor(
    private readonly store: GoalStore,
    private readonly continuation: GoalContinuationService,
    private readonly workers: GoalWorkerSelector,
    private readonly clock: GoalClock,
    private readonly health: HealthService,
    private readonly scheduler: PeriodicTaskService,
    private readonly metrics: GoalSchedulerMetrics,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    @Inject(GOALS_SETTINGS) private readonly settings: GoalsSettings,
  ) {
    this.passes = new LeaseKeeper<string>({ owner: leaseOwnerId(config.instanceId), leaseMs: settings.leaseMs, store: NEVER_RENEWED, log: this.logger });
  }

  onApplicationBootstrap(): void {
    if (!this.config.schedulerEnabled) return;
    // Every replica ticks (the claims share the goals out); a tick while a pass runs is skipped.
    this.ticker = this.scheduler.every({ name: TICKER, intervalMs: this.config.schedulerTickMs, run: () => this.tick() });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.passes.stop();
    await this.ticker?.stop();
    await this.ticking?.catch(() => undefined);
  }

  /** One ticker pass; overlapping ticks are skipped (the running pass already covers them). */
  async tick(): Promise<SchedulerPassResult | undefined> {
    if (this.ticking) return undefined;
    this.ticking = this.runOnce().finally(() => (this.ticking = undefined));
    try {
      return await this.ticking;
    } catch (e) {
      this.logger.error({ msg: 'goal scheduler pass failed', err: e });
      this.health.report('goals.scheduler', false, 'a scheduler pass failed');
      return undefined;
    }
  }

  /**
   * Claims and works every goal due at `now`, batch after batch. Each goal is handled at most once
   * per pass: after it, its next due time is later than `now` (or its lease outlives the pass).
   */
  async runOnce(opts: RunOnceOptions = {}): Promise<SchedulerPassResult> {
    // Every claim of this pass expires at now + leaseMs on the goal clock; locally that instant is
    // counted from before the clock was read, so the pass gives its claims up early rather than late.
    const claimedAtMs = Date.now();
    const now = opts.now ?? (await this.clock.now());
    const owner = leaseOwnerId(this.config.instanceId);
    const lease = this.passes.hold(owner, { renew: false, claimedAtMs });
    const claim: PassClaim = {
      lease,
      expires: new Date(now.getTime() + this.settings.leaseMs),
      // The workers' calls stop when the pass's lease runs out (or the host stops), as well as on the caller's signal.
      signal: opts.signal ? AbortSignal.any([opts.signal, lease.signal]) : lease.signal,
    };
    try {
      return await this.work(now, owner, claim, opts.maxGoals ?? Number.MAX_SAFE_INTEGER);
    } finally {
      await lease.drop();
    }
  }

  private async work(now: Date, owner: string, claim: PassClaim, limit: number): Promise<SchedulerPassResult> {
    const result: SchedulerPassResult = { claimed: 0, dispatched: 0, recorded: 0, closed: 0, fenced: 0, failed: 0 };
    while (!aborted(claim) && result.claimed < limit) {
      const batch = await this.claim(now, owner, Math.min(this.settings.batchSize, limit - result.claimed));
      if (!batch.length) break;
      result.claimed += batch.length;
      this.metrics.claimedBatch(now, batch.map((g) => g.nextDueAt));
      const items = await this.dispatch(batch, now, owner, claim, result);
      let settled: ContinuationResult[];
      try {
        settled = await this.continuation.settle(items, { now, fence: owner, onNoVerdict: 'unsatisfied' });
      } catch (e) {
        // Nothing of the batch was written: its claims expire and another pass resumes the same iterations.
        result.failed += batch.length;
        this.logger.warn({ msg: 'recording a goal batch failed; its iterations are retried after the lease', err: (e as Error).message });
        this.health.report('goals.scheduler', false, `recording a goal batch failed: ${(e as Error).name}`);
        continue;
      }
      for (const r of settled) {
        if (r.status === 'recorded') result.recorded++;
        else if (r.status === 'closed') result.closed++;
        else if (r.status === 'fenced') result.fenced++;
      }
    }
    this.metrics.passFinished(result);
    if (result.failed === 0) this.health.report('goals.scheduler', true);
    return result;
  }

  /**
   * Claims up to `limit` due goals for `owner` until now + leaseMs and returns them whole, in one
   * statement (rows another replica holds are skipped). The same statement reserves the next
   * idempotency key of every claimed goal whose arm fires (and spends a fired commitment), so the key is persisted
   * before any worker is asked: a replica that takes over after a crash asks again with the same
   * key instead of starting a second run.
   */
  private async claim(now: Date, owner: string, limit: number): Promise<GoalEntity[]> {
    const expires = new Date(now.getTime() + this.settings.leaseMs);
    const claimed = await this.store.claimDue(now, owner, limit, expires);
    // Oldest due first, as claimed.
    return claimed.sort((a, b) => (a.nextDueAt?.getTime() ?? 0) - (b.nextDueAt?.getTime() ?? 0));
  }

  /**
   * Works a claimed batch up to the continuation step: which goals close at a bound, which have
   * nothing to start, and for the others the worker's start/collect, in lanes (settings.concurrency).
   * Before each start the lane checks that the claim still holds (the pass's lease, with a margin),
   * so a replica that stalled past its lease starts nothing more once it wakes up; every write after
   * that is fenced in the database anyway.
   */
  private async dispatch(batch: GoalEntity[], now: Date, owner: string, claim: PassClaim, result: SchedulerPassResult): Promise<ContinuationItem[]> {
    const items: ContinuationItem[] = batch.map((goal) => ({ goal, intent: { kind: 'rearm' } }));
    await pool(batch.map((_, i) => i), Math.max(1, this.settings.concurrency), async (i) => {
      items[i].intent = await this.iterate(batch[i], now, owner, claim, result);
    });
    return items;
  }

  /** Whether the pass may still act on its claims (no database round trip). */
  private async held(claim: PassClaim): Promise<boolean> {
    return !aborted(claim) && !(await this.clock.movedPast(claim.expires));
  }

  /** One goal's iteration up to the continuation step. */
  private async iterate(goal: GoalEntity, now: Date, owner: string, claim: PassClaim, result: SchedulerPassResult): Promise<ContinuationIntent> {
    const signal = claim.signal;
    try {
      // Bounds first, even when no run reports: a goal past its deadline closes now.
      if (crossedBound(goal, now)) return { kind: 'close-bound' };
      const heartbeat = !goal.pendingRunId && !goal.dispatchKey && goal.continuationMode === 'heartbeat' && !goal.paused;
      // Nothing in flight and nothing reserved by the claim: paused, manual, or an arm that did not fire.
      if (!goal.pendingRunId && !goal.dispatchKey && !heartbeat) return { kind: 'rearm' };
      const worker = this.workers.workerOf(goal);
      if (!worker || (heartbeat && typeof worker.probe !== 'function')) {
        this.health.report('goals.scheduler', false, `goal worker "${goal.worker}" is not available`);
        result.failed++;
        return { kind: 'retry' };
      }
      if (heartbeat) {
        if (!(await this.held(claim))) return { kind: 'rearm' };
        const key = await this.heartbeat(goal, worker, owner, signal);
        if (!key) return { kind: 'rearm' };
        goal.dispatchKey = key;
      }
      const subject = this.continuation.subjectOf(goal);
      let runId = goal.pendingRunId;
      if (!runId) {
        // The claim ran out while this replica was busy or stalled: another replica owns the goal now.
        if (!(await this.held(claim))) return { kind: 'rearm' };
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
      this.logger.warn({ msg: 'goal iteration failed; retrying later', goalId: goal.id, err: (e as Error).message });
      this.health.report('goals.scheduler', false, `a goal worker failed: ${(e as Error).name}`);
      return { kind: 'retry' };
    }
  }

  /** A heartbeat tick of a claimed goal; answers the reserved idempotency key when a transition starts a run. */
  private async heartbeat(goal: GoalEntity, worker: GoalWorkerProvider, owner: string, signal: AbortSignal): Promise<string | undefined> {
    const tick = await observeHeartbeat(goal, worker.probe!.bind(worker), this.continuation.subjectOf(goal), {
      maxRuntimeMs: this.settings.heartbeatMaxRuntimeMs,
      maxStateBytes: this.settings.heartbeatMaxStateBytes,
      signal,
    });
    if (tick.status === 'timeout' || tick.status === 'error') {
      this.logger.warn({ msg: 'goal heartbeat evaluation did not complete; nothing started', goalId: goal.id, status: tick.status, reason: tick.reason });
      return undefined;
    }
    if (tick.status === 'unchanged') return undefined;
    const rows = await this.store.heartbeat(goal.id, owner, tick.state, tick.enqueue === true);
    if (!rows.length) return undefined;
    goal.heartbeatState = tick.state;
    if (rows[0].dispatch_key) goal.dispatchCount += 1;
    return rows[0].dispatch_key ?? undefined;
  }
}

/**
 * One heartbeat tick (RFC 0060) of a goal: the worker's predicate observes external state, bounded by
 * goals.heartbeatMaxRuntimeMs; only a transition from the persisted prior state may start a run. The
 * new state and the run's idempotency key are written together, conditional on the claim, so a
 * transition starts at most one run whichever replica sees it. Answers the key, or undefined when
 * nothing starts (unchanged, over budget, failed, refused, or the claim was lost).
 */
export async function observeHeartbeat(
  goal: GoalEntity,
  probe: NonNullable<GoalWorkerProvider['probe']>,
  subject: GoalWorkSubject,
  opts: { maxRuntimeMs: number; maxStateBytes: number; signal: AbortSignal },
): Promise<{ status: 'changed' | 'unchanged' | 'timeout' | 'error'; state?: unknown; enqueue?: boolean; reason?: string }> {
  const budget = new AbortController();
  const timer = setTimeout(() => budget.abort(), opts.maxRuntimeMs);
  try {
    const observed = await Promise.race([
      probe(subject, { priorState: goal.heartbeatState ?? null, signal: AbortSignal.any([opts.signal, budget.signal]) }),
      new Promise<never>((_, reject) => budget.signal.addEventListener('abort', () => reject(new HeartbeatTimeout()), { once: true })),
    ]);
    const state = observed?.state === undefined ? null : observed.state;
    const text = canonicalize(state) ?? 'null';
    if (Buffer.byteLength(text) > opts.maxStateBytes) return { status: 'error', reason: `the observed state exceeds ${opts.maxStateBytes} bytes` };
    if (text === (canonicalize(goal.heartbeatState ?? null) ?? 'null')) return { status: 'unchanged' };
    return { status: 'changed', state: JSON.parse(text) as unknown, enqueue: observed?.enqueue !== false };
  } catch (e) {
    if (e instanceof HeartbeatTimeout) return { status: 'timeout' };
    return { status: 'error', reason: (e as Error)?.name ?? 'Error' };
  } finally {
    clearTimeout(timer);
  }
}

class HeartbeatTimeout extends Error {}

/** What a pass's lanes check before they act. */
interface PassClaim {
  /** Watched locally; aborted once the pass outlives its claims (or the host stops). */
  lease: HeldLease<void>;
  /** When the claims expire on the goal clock (now + leaseMs). */
  expires: Date;
  /** What the workers' calls run under: the lease's signal, and the caller's when given. */
  signal: AbortSignal;
}

/** Reading the lease's signal first brings its expiry up to date, and the pass's signal follows it. */
function aborted(claim: PassClaim): boolean {
  return claim.lease.signal.aborted || claim.signal.aborted;
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  });
  await Promise.all(lanes);
}
