import { setTimeout as delay } from 'node:timers/promises';
import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { WiringFault } from '../errors/internal-fault';
import { PeriodicTask, PeriodicTaskService } from '../scheduler/periodic-task.service';
import { batchStatement, nextBatchSize, RETENTION_BATCH } from './retention-statement';

export const RETENTION_TASK = 'platform.retention';
export { RETENTION_BATCH, RETENTION_BATCH_MAX, RETENTION_BATCH_MIN } from './retention-statement';
/** Idempotency records deleted per statement. */
export const IDEMPOTENCY_BATCH = 1_000;

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

/** What one sweep did: its counts, its time, its batches, and whether expired rows were left when its budget ran out. */
export interface RetentionSweep extends RetentionCounts {
  durationMs: number;
  backlog: boolean;
  /** Run batches (statements) it took, and the most runs one of them asked for. */
  batches: number;
  largestBatch: number;
}

/** A run retention is about to delete: its tenant and id (a uuid). */
export interface RunRef {
  tenant: string;
  id: string;
}

/**
 * Rows a capability keeps per run that go with a deleted run (registered at bootstrap: the run's
 * node rows and artifacts, its gates and their decisions), counted under `counts`. Preferably a part of
 * the batch's one statement (`deletes`): a DELETE of the capability's rows of the runs in relation
 * `runs` (columns "tenant" text, "id" uuid), ending in RETURNING (any columns), which the platform
 * composes as one CTE of the batch's statement, so the batch stays one statement and one transaction
 * whatever the number of tables. It sees the snapshot the statement started with, like every other
 * part, so it must not depend on another part's deletion; it names only the capability's own tables.
 * `afterCommit.rows` is an SQL expression over its RETURNING row giving a json value for the rows
 * `afterCommit.run` needs once the batch committed (NULL: not needed; deleting what lives outside the
 * database, such as a plugin store's objects); its failure is logged and does not undo the sweep.
 *
 * Otherwise (`purge`) the capability deletes its rows itself, in the batch's transaction, after the
 * batch's statement (the run rows are gone by then; the runs are given by reference); any such purger
 * makes every batch a transaction of its statement and the purgers' own.
 */
export type RunPurger =
  | {
      counts: keyof RetentionCounts;
      deletes(runs: string): string;
      afterCommit?: { rows: string; run(rows: unknown[]): Promise<void> };
    }
  | {
      counts: keyof RetentionCounts;
      purge(m: EntityManager, runs: RunRef[]): Promise<{ deleted: number; afterCommit?: () => Promise<void> }>;
    };

type StatementPurger = Extract<RunPurger, { deletes(runs: string): string }>;
type CallPurger = Extract<RunPurger, { purge: unknown }>;

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
 * The owner of the run rows (the runs capability), as parts of the batch's statement (./retention-statement.ts):
 * `expiredPage`, over $1 (retention in days), $2 (page size), $3 and $4 (a keyset: finish time as text, id),
 * selects up to $2 runs finished more than $1 days ago, after the keyset, oldest first, as "id" and "at" (the
 * finish time, the keyset's first part); `claim(page, keep)` selects of those the runs still terminal for which
 * no `keep` condition holds, as "tenant" and "id", locking them and skipping rows another transaction holds;
 * `locked()`, over $1 (ids), selects runs a transaction has claimed already (the force-expire seam's) the way `claim`
 * does; `deleteRuns(runs)` deletes the run rows of relation `runs` (what `claim` or `locked` selected), ending in
 * RETURNING. The relation may carry columns of the owner's own beside "tenant" and "id" (the rows' addresses).
 */
export interface RunRetentionOwner {
  expiredPage(): string;
  claim(page: string, keep: readonly RunKeeper[]): string;
  locked(): string;
  deleteRuns(runs: string): string;
}

/** The rows a DELETE (or UPDATE) deleted, from its answer: what a purger counts. */
export function deletedCount(result: unknown): number {
  // DELETE answers [rows, count] through TypeORM's pg driver.
  return Array.isArray(result) && typeof result[1] === 'number' ? result[1] : 0;
}

const NO_COUNTS = (): RetentionCounts => ({ runs: 0, runNodes: 0, events: 0, eventStreams: 0, activityInvocations: 0, approvals: 0, approvalDecisions: 0, idempotencyRecords: 0, artifacts: 0, compensationPlans: 0, interruptCallbacks: 0, workspaceSnapshots: 0 });
/** The keyset before every finished run. */
const START: [string, string] = ['-infinity', '00000000-0000-0000-0000-000000000000'];

/** What one batch statement answered (./retention-statement.ts). */
interface BatchRow {
  candidates: number;
  after: [string, string] | null;
  runs: number;
  events: number;
  eventStreams: number;
  activityInvocations: number;
  refs?: RunRef[] | null;
  [part: string]: unknown;
}

/**
 * The retention policy (docs/operations.md §Retention). Hourly, on one replica at a time (a
 * periodic-task lease), in batches, each batch one statement (one transaction), until the backlog is
 * empty or the sweep's time budget is spent (OPENWOP_RETENTION_SWEEP_BUDGET_MS); each batch is sized
 * from the time of the one before to take about OPENWOP_RETENTION_BATCH_MS; between batches it pauses
 * for its duty share (OPENWOP_RETENTION_SWEEP_DUTY_PERCENT), so it never holds the event loop and leaves
 * the database to the engine for the rest; a sweep that left a backlog makes the next one come after
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
 * the next sweep instead of blocking it. A sweep reads the expired runs once, in finish order (a keyset
 * it carries from batch to batch), so the runs a keeper keeps are passed once per sweep, not once per batch.
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
  /** The batch statements, composed on first use (registrations end at bootstrap). */
  private statements?: { claim: string; given: string; parts: StatementPurger[]; calls: CallPurger[] };

  /** The owner of the run rows (one: the runs capability); without it no run is ever deleted. */
  registerRunOwner(owner: RunRetentionOwner): void {
    if (this.owner) throw new WiringFault('retention: a second owner of the run rows registered');
    this.owner = owner;
    this.statements = undefined;
  }

  /** Adds the rows of a capability that are deleted with their run. */
  registerRunPurger(purger: RunPurger): void {
    this.purgers.push(purger);
    this.statements = undefined;
  }

  /** Adds a capability's reason to keep a finished run. */
  registerRunKeeper(keeper: RunKeeper): void {
    this.keepers.push(keeper);
    this.statements = undefined;
  }

  /** The reasons to keep a finished run registered so far. */
  runKeepers(): readonly RunKeeper[] {
    return this.keepers;
  }

  /** The batch statement that claims expired runs and deletes them (parameters: days, page size, keyset). */
  batchSql(): string {
    return this.composed().claim;
  }

  private composed(): NonNullable<RetentionService['statements']> {
    const owner = this.owner;
    if (!owner) throw new WiringFault('retention: no owner of the run rows registered');
    if (this.statements) return this.statements;
    const parts = this.purgers.filter((p): p is StatementPurger => 'deletes' in p);
    const calls = this.purgers.filter((p): p is CallPurger => 'purge' in p);
    const deleteRuns = (runs: string) => owner.deleteRuns(runs);
    const keep = [...this.keepers];
    this.statements = {
      claim: batchStatement({ page: owner.expiredPage(), claim: (page) => owner.claim(page, keep) }, parts, deleteRuns, calls.length > 0),
      given: batchStatement({ given: owner.locked() }, parts, deleteRuns, false),
      parts,
      calls,
    };
    return this.statements;
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
   * after each batch for the duty share; `pace` overrides the configured budget, share and batch time
   * for this sweep (`batch`: the first batch's size). `backlog`: the budget or the signal stopped it with rows left.
   */
  async sweep(signal?: AbortSignal, pace: { budgetMs?: number; dutyPercent?: number; batchTargetMs?: number; batch?: number } = {}): Promise<RetentionSweep> {
    const counts = NO_COUNTS();
    const started = Date.now();
    const deadline = started + (pace.budgetMs ?? this.config.retention.sweepBudgetMs);
    const duty = Math.min(100, Math.max(1, pace.dutyPercent ?? this.config.retention.sweepDutyPercent));
    const targetMs = pace.batchTargetMs ?? this.config.retention.batchTargetMs;
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
    let size = pace.batch ?? RETENTION_BATCH;
    let after = START;
    let batches = 0;
    let largestBatch = 0;
    let backlog = await drain(async () => {
      if (!this.owner) return false;
      const t0 = Date.now();
      const asked = size;
      const page = await this.runBatch(asked, after, counts);
      batches++;
      largestBatch = Math.max(largestBatch, asked);
      size = nextBatchSize(asked, Date.now() - t0, targetMs);
      if (page.after) after = page.after;
      return page.candidates >= asked;
    });
    backlog = (await drain(async () => {
      const n = deletedCount(
        await this.ds.query(
          `DELETE FROM "idempotency_record" WHERE ("tenant", "workspace_key", "endpoint", "idempotency_key") IN (
             SELECT "tenant", "workspace_key", "endpoint", "idempotency_key" FROM "idempotency_record"
             WHERE "expires_at" < now() AND "created_at" < now() - make_interval(hours => $1)
               AND ("lease_expires_at" IS NULL OR "lease_expires_at" < now())
             LIMIT $2 FOR UPDATE SKIP LOCKED)`,
          [this.config.retention.idempotencyHours, IDEMPOTENCY_BATCH],
        ),
      );
      counts.idempotencyRecords += n;
      return n >= IDEMPOTENCY_BATCH;
    })) || backlog;
    const durationMs = Date.now() - started;
    this.logger.log({
      msg: 'retention sweep',
      ...counts,
      backlog,
      batches,
      largestBatch,
      runRetentionDays: this.config.retention.runDays,
      idempotencyRetentionHours: this.config.retention.idempotencyHours,
      durationMs,
    });
    return { ...counts, durationMs, backlog, batches, largestBatch };
  }

  /**
   * One batch: claims up to `size` expired runs after the keyset `after` and deletes them with their
   * rows, in one statement (one transaction with the purgers that delete their rows themselves).
   */
  private async runBatch(size: number, after: [string, string], counts: RetentionCounts): Promise<{ candidates: number; after: [string, string] | null }> {
    const s = this.composed();
    const params = [this.config.retention.runDays, size, after[0], after[1]];
    const after_: Array<() => Promise<void>> = [];
    let row: BatchRow;
    if (!s.calls.length) {
      [row] = (await this.ds.query(s.claim, params)) as BatchRow[];
      after_.push(...this.tally(row, s.parts, counts));
    } else {
      row = await this.ds.transaction(async (m) => {
        const [r] = (await m.query(s.claim, params)) as BatchRow[];
        after_.push(...(await this.callPurgers(m, s.calls, r.refs ?? [], counts)));
        return r;
      });
      after_.push(...this.tally(row, s.parts, counts));
    }
    await this.afterCommit(after_);
    return { candidates: row.candidates, after: row.after };
  }

  /** Adds a batch's counts; answers the statement parts' steps for after the commit. */
  private tally(row: BatchRow, parts: StatementPurger[], counts: RetentionCounts): Array<() => Promise<void>> {
    counts.runs += row.runs;
    counts.events += row.events;
    counts.eventStreams += row.eventStreams;
    counts.activityInvocations += row.activityInvocations;
    const after: Array<() => Promise<void>> = [];
    parts.forEach((p, i) => {
      counts[p.counts] += row[`p${i}`] as number;
      const rows = row[`a${i}`] as unknown[] | null | undefined;
      if (p.afterCommit && rows?.length) after.push(() => p.afterCommit!.run(rows));
    });
    return after;
  }

  private async callPurgers(m: EntityManager, calls: CallPurger[], runs: RunRef[], counts: RetentionCounts): Promise<Array<() => Promise<void>>> {
    const after: Array<() => Promise<void>> = [];
    if (!runs.length) return after;
    for (const p of calls) {
      const r = await p.purge(m, runs);
      counts[p.counts] += r.deleted;
      if (r.afterCommit) after.push(r.afterCommit);
    }
    return after;
  }

  /**
   * Deletes runs claimed (locked) in `m`'s transaction with every row that belongs to them, through
   * the sweep's own statement, adding to `counts`; answers the purgers' steps for after the commit
   * (`afterCommit`). The force-expire seam (./force-expire.service.ts) deletes one run through here.
   */
  async deleteClaimed(m: EntityManager, doomed: RunRef[], counts: RetentionCounts): Promise<Array<() => Promise<void>>> {
    const s = this.composed();
    const [row] = (await m.query(s.given, [doomed.map((d) => d.id)])) as BatchRow[];
    const after = this.tally(row, s.parts, counts);
    after.push(...(await this.callPurgers(m, s.calls, doomed, counts)));
    return after;
  }

  /** Runs the purgers' after-commit steps; a failure is logged and does not undo the deletion. */
  async afterCommit(after: Array<() => Promise<void>>): Promise<void> {
    for (const f of after) await f().catch((e: unknown) => this.logger.warn({ msg: 'retention: cleanup after commit failed', error: (e as Error)?.message ?? String(e) }));
  }
}
