import { setTimeout as delay } from 'node:timers/promises';
import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { WiringFault } from '../errors/internal-fault';
import { PeriodicTask, PeriodicTaskService } from '../scheduler/periodic-task.service';

export const RETENTION_TASK = 'platform.retention';
/** Runs deleted per transaction (with all their rows); idempotency records go ten times as many at once. */
export const RETENTION_BATCH = 100;

export interface RetentionCounts {
  runs: number;
  runNodes: number;
  events: number;
  eventStreams: number;
  activityInvocations: number;
  approvals: number;
  approvalDecisions: number;
  idempotencyRecords: number;
  artifacts: number;
  compensationPlans: number;
  interruptCallbacks: number;
  workspaceSnapshots: number;
}

/** What one sweep did: its counts, its time, and whether expired rows were left when its budget ran out. */
export interface RetentionSweep extends RetentionCounts {
  durationMs: number;
  backlog: boolean;
}

/** A run retention is about to delete: its tenant and id (a uuid). */
export interface RunRef {
  tenant: string;
  id: string;
}

/**
 * Rows a capability keeps per run that go with a deleted run (registered at bootstrap: the run's
 * node rows and artifacts, its gates and their decisions): `purge` deletes them inside the batch's
 * transaction and counts them under `counts`; `afterCommit`, when answered, runs once that
 * transaction committed (deleting what lives outside the database, such as a plugin store's
 * objects); its failure is logged and does not undo the sweep.
 */
export interface RunPurger {
  counts: keyof RetentionCounts;
  purge(m: EntityManager, runs: RunRef[]): Promise<{ deleted: number; afterCommit?: () => Promise<void> }>;
}

/**
 * A capability's reason to keep a finished run (a pending gate names it, an active goal counts it):
 * an SQL condition, true when the run must be kept, over the candidate run given as two SQL
 * expressions (`tenant`: text, `id`: uuid). It is evaluated inside the owner's claim of expired
 * runs, so a kept run never takes a place in a batch. The keeper's own tables are named only in
 * the keeper's text. It must be a probe per candidate over an index of the keeper's table, so a
 * batch costs what it reads, not what is kept: an `EXISTS` written with `OFFSET 0`, which PostgreSQL
 * neither turns into an anti-join nor into a hashed subplan (either reads every pending gate or
 * active goal first: a full-table veto).
 */
export interface RunKeeper {
  name: string;
  keeps(run: { tenant: string; id: string }): string;
}

/**
 * The owner of the run rows (the runs capability): claims, in the batch's transaction, up to `limit`
 * runs finished more than `olderThanDays` ago for which no `keep` condition holds, oldest first,
 * locking them and skipping rows another transaction holds; then deletes the run rows themselves,
 * after every purger deleted what belongs to them.
 */
export interface RunRetentionOwner {
  claimExpired(m: EntityManager, opts: { olderThanDays: number; limit: number; keep: RunKeeper[] }): Promise<RunRef[]>;
  deleteRuns(m: EntityManager, runs: RunRef[]): Promise<number>;
}

/** The rows a DELETE (or UPDATE) deleted, from its answer: what a purger counts. */
export function deletedCount(result: unknown): number {
  // DELETE answers [rows, count] through TypeORM's pg driver.
  return Array.isArray(result) && typeof result[1] === 'number' ? result[1] : 0;
}

/**
 * The retention policy (docs/operations.md §Retention). Hourly, on one replica at a time (a
 * periodic-task lease), in batches, each batch one transaction, until the backlog is empty or the
 * sweep's time budget is spent (OPENWOP_RETENTION_SWEEP_BUDGET_MS); between batches it pauses for its
 * duty share (OPENWOP_RETENTION_SWEEP_DUTY_PERCENT), so it never holds the event loop and leaves the
 * database to the engine for the rest; a sweep that left a backlog makes the next one come after
 * OPENWOP_RETENTION_CATCH_UP_MS instead of the hour:
 *
 * - a run finished (completed, failed, cancelled) more than OPENWOP_RUN_RETENTION_DAYS ago is
 *   deleted with every row that belongs to it: its events and event-stream counter and its
 *   activity invocations (the platform's tables), and the rows of each capability, which that
 *   capability deletes itself (`registerRunPurger`: the run's node rows and artifacts, its closed
 *   approval gates and interrupts with their decisions). A run that is not terminal, that a pending
 *   gate or interrupt names, or that an active or escalated goal counts among its iterations is
 *   never deleted (`registerRunKeeper`: the approvals and goals capabilities). The platform names
 *   no capability's table: the run rows are claimed and deleted by their owner (`registerRunOwner`). Audit entries are never deleted:
 *   the audit log outlives the runs it mentions. Webhook deliveries keep their own retention
 *   (OPENWOP_WEBHOOK_HISTORY_DAYS); goal_run rows are the goal's ledger and stay with the goal.
 * - an idempotency record older than OPENWOP_IDEMPOTENCY_RETENTION_HOURS, no longer answering
 *   replays (expired) and not leased by a request in flight, is deleted.
 *
 * Rows are claimed with FOR UPDATE SKIP LOCKED, so a run a request is cancelling (locked) waits for
 * the next sweep instead of blocking it.
 */
@Injectable()
export class RetentionService implements OnApplicationBootstrap {
  private readonly logger = new Logger('retention');

  constructor(
    private readonly ds: DataSource,
    private readonly tasks: PeriodicTaskService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  private owner?: RunRetentionOwner;
  private readonly purgers: RunPurger[] = [];
  private readonly keepers: RunKeeper[] = [];

  /** The owner of the run rows (one: the runs capability); without it no run is ever deleted. */
  registerRunOwner(owner: RunRetentionOwner): void {
    if (this.owner) throw new WiringFault('retention: a second owner of the run rows registered');
    this.owner = owner;
  }

  /** Adds the rows of a capability that are deleted with their run. */
  registerRunPurger(purger: RunPurger): void {
    this.purgers.push(purger);
  }

  /** Adds a capability's reason to keep a finished run. */
  registerRunKeeper(keeper: RunKeeper): void {
    this.keepers.push(keeper);
  }

  /** The reasons to keep a finished run registered so far. */
  runKeepers(): readonly RunKeeper[] {
    return this.keepers;
  }

  readonly task: PeriodicTask = {
    name: RETENTION_TASK,
    intervalMs: 3_600_000,
    leaseMs: 2 * 3_600_000,
    run: async (signal) => ((await this.sweep(signal)).backlog ? { nextInMs: this.config.retention.catchUpMs } : undefined),
  };

  onApplicationBootstrap(): void {
    this.tasks.register(this.task);
  }

  /**
   * One sweep: expired runs, then idempotency records, batch after batch until a batch comes back
   * short (nothing left) or the time budget is spent (at least one batch of each kind runs), pausing
   * after each batch for the duty share; `pace` overrides the configured budget and share for this
   * sweep. `backlog`: the budget or the signal stopped it with rows left.
   */
  async sweep(signal?: AbortSignal, pace: { budgetMs?: number; dutyPercent?: number } = {}): Promise<RetentionSweep> {
    const counts: RetentionCounts = { runs: 0, runNodes: 0, events: 0, eventStreams: 0, activityInvocations: 0, approvals: 0, approvalDecisions: 0, idempotencyRecords: 0, artifacts: 0, compensationPlans: 0, interruptCallbacks: 0, workspaceSnapshots: 0 };
    const started = Date.now();
    const deadline = started + (pace.budgetMs ?? this.config.retention.sweepBudgetMs);
    const duty = Math.min(100, Math.max(1, pace.dutyPercent ?? this.config.retention.sweepDutyPercent));
    /** Runs `batch` until it comes back short; true when it stopped with rows left. */
    const drain = async (batch: () => Promise<boolean>): Promise<boolean> => {
      for (;;) {
        const t0 = Date.now();
        if (!(await batch())) return false;
        if (signal?.aborted || Date.now() >= deadline) return true;
        // Yield the event loop, and the database for the rest of the duty cycle.
        const pause = Math.min(((Date.now() - t0) * (100 - duty)) / duty, deadline - Date.now());
        await delay(Math.max(0, pause), undefined, { signal }).catch(() => undefined);
        if (signal?.aborted || Date.now() >= deadline) return true;
      }
    };
    let backlog = await drain(async () => (await this.runBatch(counts)) >= RETENTION_BATCH);
    backlog = (await drain(async () => {
      const n = deletedCount(
        await this.ds.query(
          `DELETE FROM "idempotency_record" WHERE ("tenant", "workspace_key", "endpoint", "idempotency_key") IN (
             SELECT "tenant", "workspace_key", "endpoint", "idempotency_key" FROM "idempotency_record"
             WHERE "expires_at" < now() AND "created_at" < now() - make_interval(hours => $1)
               AND ("lease_expires_at" IS NULL OR "lease_expires_at" < now())
             LIMIT $2 FOR UPDATE SKIP LOCKED)`,
          [this.config.retention.idempotencyHours, RETENTION_BATCH * 10],
        ),
      );
      counts.idempotencyRecords += n;
      return n >= RETENTION_BATCH * 10;
    })) || backlog;
    const durationMs = Date.now() - started;
    this.logger.log({
      msg: 'retention sweep',
      ...counts,
      backlog,
      runRetentionDays: this.config.retention.runDays,
      idempotencyRetentionHours: this.config.retention.idempotencyHours,
      durationMs,
    });
    return { ...counts, durationMs, backlog };
  }

  /** One transaction: claims up to RETENTION_BATCH expired runs and deletes them with their rows. Returns how many runs. */
  private async runBatch(counts: RetentionCounts): Promise<number> {
    const owner = this.owner;
    if (!owner) return 0;
    const after: Array<() => Promise<void>> = [];
    const n = await this.ds.transaction(async (m) => {
      const doomed = await owner.claimExpired(m, { olderThanDays: this.config.retention.runDays, limit: RETENTION_BATCH, keep: this.keepers });
      if (!doomed.length) return 0;
      after.push(...(await this.deleteClaimed(m, doomed, counts)));
      return doomed.length;
    });
    await this.afterCommit(after);
    return n;
  }

  /**
   * Deletes runs claimed (locked) in `m`'s transaction with every row that belongs to them, the way
   * a sweep batch does, adding to `counts`; answers the purgers' steps for after the commit
   * (`afterCommit`). The force-expire seam (./force-expire.service.ts) deletes one run through here.
   */
  async deleteClaimed(m: EntityManager, doomed: RunRef[], counts: RetentionCounts): Promise<Array<() => Promise<void>>> {
    const owner = this.owner;
    if (!owner) throw new WiringFault('retention: no owner of the run rows registered');
    const after: Array<() => Promise<void>> = [];
    const ids = doomed.map((d) => d.id);
    const tenants = doomed.map((d) => d.tenant);
    const pairs = `unnest($1::text[], $2::text[]) AS d("tenant", "id")`;
    counts.events += deletedCount(await m.query(`DELETE FROM "event" e USING ${pairs} JOIN "event_stream" s ON s."tenant" = d."tenant" AND s."stream_id" = d."id" WHERE e."stream_key" = s."key"`, [tenants, ids]));
    counts.eventStreams += deletedCount(await m.query(`DELETE FROM "event_stream" s USING ${pairs} WHERE s."tenant" = d."tenant" AND s."stream_id" = d."id"`, [tenants, ids]));
    for (const p of this.purgers) {
      const r = await p.purge(m, doomed);
      counts[p.counts] += r.deleted;
      if (r.afterCommit) after.push(r.afterCommit);
    }
    counts.activityInvocations += deletedCount(await m.query(`DELETE FROM "activity_invocation" i USING ${pairs} WHERE i."tenant" = d."tenant" AND i."run_id" = d."id"`, [tenants, ids]));
    counts.runs += await owner.deleteRuns(m, doomed);
    return after;
  }

  /** Runs the purgers' after-commit steps; a failure is logged and does not undo the deletion. */
  async afterCommit(after: Array<() => Promise<void>>): Promise<void> {
    for (const f of after) await f().catch((e: unknown) => this.logger.warn({ msg: 'retention: cleanup after commit failed', error: (e as Error)?.message ?? String(e) }));
  }
}
