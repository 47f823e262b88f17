import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { PeriodicTask, PeriodicTaskService } from '../scheduler/periodic-task.service';

export const RETENTION_TASK = 'platform.retention';
/** Runs deleted per transaction (with all their rows), and the most batches of each kind one sweep does. */
export const RETENTION_BATCH = 100;
export const RETENTION_MAX_BATCHES = 200;
const TERMINAL = `('completed', 'failed', 'cancelled')`;

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
}

/**
 * Rows a capability keeps per run that go with a deleted run (registered at bootstrap, e.g. the run
 * artifacts): `purge` deletes them inside the batch's transaction and counts them under `counts`;
 * `afterCommit`, when answered, runs once that transaction committed (deleting what lives outside
 * the database, such as a plugin store's objects); its failure is logged and does not undo the sweep.
 */
export interface RunPurger {
  counts: keyof RetentionCounts;
  purge(m: EntityManager, runs: Array<{ tenant: string; id: string }>): Promise<{ deleted: number; afterCommit?: () => Promise<void> }>;
}

function affected(result: unknown): number {
  // DELETE answers [rows, count] through TypeORM's pg driver.
  return Array.isArray(result) && typeof result[1] === 'number' ? result[1] : 0;
}

/**
 * The retention policy (docs/operations.md §Retention). Hourly, on one replica at a time (a
 * periodic-task lease), in bounded batches, each batch one transaction:
 *
 * - a run finished (completed, failed, cancelled) more than OPENWOP_RUN_RETENTION_DAYS ago is
 *   deleted with every row that belongs to it: its node rows, the rows capabilities register (`registerRunPurger`: the run artifacts), its events and event-stream counter,
 *   its activity invocations, and its closed approval gates and interrupts with their decisions. A
 *   run that is not terminal, that a pending gate or interrupt names, or that an active or
 *   escalated goal counts among its iterations is never deleted. Audit entries are never deleted:
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

  private readonly purgers: RunPurger[] = [];

  /** Adds the rows of a capability that are deleted with their run. */
  registerRunPurger(purger: RunPurger): void {
    this.purgers.push(purger);
  }

  readonly task: PeriodicTask = { name: RETENTION_TASK, intervalMs: 3_600_000, leaseMs: 2 * 3_600_000, run: (signal) => this.sweep(signal).then(() => undefined) };

  onApplicationBootstrap(): void {
    this.tasks.register(this.task);
  }

  async sweep(signal?: AbortSignal): Promise<RetentionCounts> {
    const counts: RetentionCounts = { runs: 0, runNodes: 0, events: 0, eventStreams: 0, activityInvocations: 0, approvals: 0, approvalDecisions: 0, idempotencyRecords: 0, artifacts: 0 };
    const started = Date.now();
    for (let i = 0; i < RETENTION_MAX_BATCHES && !signal?.aborted; i++) {
      if ((await this.runBatch(counts)) < RETENTION_BATCH) break;
    }
    for (let i = 0; i < RETENTION_MAX_BATCHES && !signal?.aborted; i++) {
      const n = affected(
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
      if (n < RETENTION_BATCH * 10) break;
    }
    this.logger.log({
      msg: 'retention sweep',
      ...counts,
      runRetentionDays: this.config.retention.runDays,
      idempotencyRetentionHours: this.config.retention.idempotencyHours,
      durationMs: Date.now() - started,
    });
    return counts;
  }

  /** One transaction: claims up to RETENTION_BATCH expired runs and deletes them with their rows. Returns how many runs. */
  private async runBatch(counts: RetentionCounts): Promise<number> {
    const after: Array<() => Promise<void>> = [];
    const n = await this.ds.transaction(async (m) => {
      const doomed = (await m.query(
        `SELECT r."id", r."tenant" FROM "run" r
         WHERE r."status" IN ${TERMINAL}
           AND coalesce(r."completed_at", r."created_at") < now() - make_interval(days => $1)
           AND NOT EXISTS (SELECT 1 FROM "approval" a WHERE a."state" = 'pending' AND a."tenant" = r."tenant"
                           AND (a."run_id" = r."id" OR (a."subject_kind" = 'run-node' AND a."subject_id" = r."id")))
           AND NOT EXISTS (SELECT 1 FROM "goal_run" g JOIN "goal" o ON o."id" = g."goal_id" AND o."tenant" = g."tenant"
                           WHERE g."tenant" = r."tenant" AND g."run_id" = r."id"::text AND o."state" IN ('active', 'escalated'))
         ORDER BY coalesce(r."completed_at", r."created_at")
         LIMIT $2
         FOR UPDATE OF r SKIP LOCKED`,
        [this.config.retention.runDays, RETENTION_BATCH],
      )) as Array<{ id: string; tenant: string }>;
      if (!doomed.length) return 0;
      const ids = doomed.map((d) => d.id);
      const tenants = doomed.map((d) => d.tenant);
      const pairs = `unnest($1::text[], $2::text[]) AS d("tenant", "id")`;
      counts.events += affected(await m.query(`DELETE FROM "event" e USING ${pairs} WHERE e."tenant" = d."tenant" AND e."stream_id" = d."id"`, [tenants, ids]));
      counts.eventStreams += affected(await m.query(`DELETE FROM "event_stream" s USING ${pairs} WHERE s."tenant" = d."tenant" AND s."stream_id" = d."id"`, [tenants, ids]));
      counts.runNodes += affected(await m.query(`DELETE FROM "run_node" WHERE "run_id" = ANY($1::uuid[])`, [ids]));
      for (const p of this.purgers) {
        const r = await p.purge(m, doomed);
        counts[p.counts] += r.deleted;
        if (r.afterCommit) after.push(r.afterCommit);
      }
      counts.activityInvocations += affected(await m.query(`DELETE FROM "activity_invocation" i USING ${pairs} WHERE i."tenant" = d."tenant" AND i."run_id" = d."id"`, [tenants, ids]));
      const gates = (await m.query(
        `SELECT a."id" FROM "approval" a WHERE a."run_id" = ANY($1::uuid[]) UNION SELECT a."id" FROM "approval" a WHERE a."subject_kind" = 'run-node' AND a."subject_id" = ANY($1::uuid[])`,
        [ids],
      )) as Array<{ id: string }>;
      if (gates.length) {
        const gateIds = gates.map((g) => g.id);
        counts.approvalDecisions += affected(await m.query(`DELETE FROM "approval_decision" WHERE "approval_id" = ANY($1::uuid[])`, [gateIds]));
        counts.approvals += affected(await m.query(`DELETE FROM "approval" WHERE "id" = ANY($1::uuid[])`, [gateIds]));
      }
      counts.runs += affected(await m.query(`DELETE FROM "run" WHERE "id" = ANY($1::uuid[])`, [ids]));
      return doomed.length;
    });
    for (const f of after) await f().catch((e: unknown) => this.logger.warn({ msg: 'retention: cleanup after commit failed', error: (e as Error)?.message ?? String(e) }));
    return n;
  }
}
