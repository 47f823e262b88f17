import type { DataSource, EntityManager } from 'typeorm';
import type { InterruptRequest } from '@openwop-host/plugin-sdk';
import { EVENTS_CHANNEL, RUNS_CHANNEL } from '../../platform/database/database-notifications';
import { BatchEvent, eventInsertCtes, eventRows } from '../../platform/events/event-log.service';
import { RunNodeEntity, RunNodeStatus } from './run-node.entity';
import type { WorkflowDefinition } from './workflow-definition';

/**
 * Every statement of the run engine, each a function of the connection it runs on (the data source,
 * or the manager of the caller's transaction) and typed parameters. The SQL texts are snapshotted
 * (run-store.spec.ts), so a changed statement shows in review.
 */

/** What a statement runs on: the data source, or a transaction's manager. */
export type Queryable = Pick<EntityManager, 'query'>;

/** The run status of a run suspended on an interrupt of each kind (run-snapshot.schema.json). */
export const WAITING_STATUS: Record<InterruptRequest['kind'], string> = {
  approval: 'waiting-approval',
  clarification: 'waiting-input',
  'external-event': 'waiting-external',
};
export const WAITING_STATUSES = Object.values(WAITING_STATUS);

/** An operator's pause of a run (stored as `metadata.pause` on the run row until the run is resumed). */
export interface PauseRequest {
  drainPolicy: 'immediate' | 'drain-current-node';
  reason?: string;
  requestedAt: string;
  pausedAt?: string;
  /** The status to return to on resume (`pending` for a run paused before it started). */
  fromStatus?: string;
  idempotencyKey?: string;
}

/** A run row as a claim returns it (and as a run created here is claimed by its own insert). */
export interface ClaimedRow {
  id: string;
  tenant: string;
  workspace: string | null;
  principal: string | null;
  status: string;
  workflow_id: string;
  definition: WorkflowDefinition;
  inputs: Record<string, unknown> | null;
  configurable: Record<string, unknown> | null;
  scopes: string[] | null;
  fence: number;
  cancel_requested: boolean;
  node_executions: number;
  cost_usd: number;
  started_at: Date | null;
  trace_parent?: string | null;
  trace_state?: string | null;
  /** `fork` ({sourceRunId, mode, fromSeq}) on a run created by POST /v1/runs/{runId}:fork. */
  metadata?: Record<string, unknown> | null;
}

/** A node row as a flush writes it. */
export interface NodeWrite {
  nodeId: string;
  typeId: string;
  status: RunNodeStatus;
  attempt: number;
  outputs?: Record<string, unknown> | null;
  error?: { code: string; message: string } | null;
  gateId?: string | null;
}

/** What a flush changes on the run row besides its counters and lease. */
export interface RunUpdate {
  status?: string;
  /** Stamp `metadata.pause.pausedAt` (the run is paused by this write). */
  paused?: boolean;
  outputs?: Record<string, unknown>;
  error?: { code: string; message: string; details?: Record<string, unknown> };
  terminal?: boolean;
  release?: boolean;
  /** `current_node_id` (the node the run is parked on, or in flight). */
  current?: string;
}

/** The fence of one claim: the run row is written only while this owner and fence hold its lease. */
export interface RunClaim {
  runId: string;
  owner: string;
  fence: number;
}

export function rowsOf<T>(res: unknown): T[] {
  // pg through TypeORM answers [rows, count] for UPDATE ... RETURNING, rows for INSERT/SELECT.
  if (Array.isArray(res) && res.length === 2 && Array.isArray(res[0]) && typeof res[1] === 'number') return res[0] as T[];
  return res as T[];
}

const CLAIMABLE = `"kind" = 'workflow' AND "status" IN ('pending', 'running', 'cancelling') AND ("lease_expires_at" IS NULL OR "lease_expires_at" < now())`;

/**
 * Claims the oldest claimable runs for owner $1, leased for $2 ms, at most $3 of them. Its order and
 * predicate are those of the partial index `run_claimable_idx`, so a claim reads the first entries of
 * that index instead of sorting the whole backlog.
 */
export const CLAIM_RUNS_SQL = `WITH c AS (SELECT "id" FROM "run" WHERE ${CLAIMABLE} ORDER BY "created_at" LIMIT $3 FOR UPDATE SKIP LOCKED)
  UPDATE "run" r SET "lease_owner" = $1, "lease_expires_at" = now() + ($2::int * interval '1 millisecond'), "fence" = r."fence" + 1
  FROM c WHERE r."id" = c."id" RETURNING r.*`;

export async function claimRuns(q: Queryable, p: { owner: string; leaseMs: number; limit: number }): Promise<ClaimedRow[]> {
  return rowsOf<ClaimedRow>(await q.query(CLAIM_RUNS_SQL, [p.owner, p.leaseMs, p.limit]));
}

/** Claims one run (created or released here) when it is claimable. */
export const CLAIM_RUN_SQL = `UPDATE "run" SET "lease_owner" = $2, "lease_expires_at" = now() + ($3::int * interval '1 millisecond'), "fence" = "fence" + 1
             WHERE "id" = $1 AND ${CLAIMABLE} RETURNING *`;

export async function claimRun(q: Queryable, p: { runId: string; owner: string; leaseMs: number }): Promise<ClaimedRow | undefined> {
  return rowsOf<ClaimedRow>(await q.query(CLAIM_RUN_SQL, [p.runId, p.owner, p.leaseMs]))[0];
}

/** Extends a claim's lease; answers what an operator asked for meanwhile (undefined: the lease was lost). */
export const RENEW_LEASE_SQL = `UPDATE "run" SET "lease_expires_at" = now() + ($4::int * interval '1 millisecond') WHERE "id" = $1 AND "lease_owner" = $2 AND "fence" = $3 RETURNING "cancel_requested", "metadata"->'pause' AS "pause"`;

export async function renewLease(q: Queryable, p: RunClaim & { leaseMs: number }): Promise<{ cancel_requested: boolean; pause: PauseRequest | null } | undefined> {
  return rowsOf<{ cancel_requested: boolean; pause: PauseRequest | null }>(await q.query(RENEW_LEASE_SQL, [p.runId, p.owner, p.fence, p.leaseMs]))[0];
}

/** Hands a claim's lease back quietly (a run adopted while stopping; its lease expires anyway). */
export const RELEASE_LEASE_SQL = `UPDATE "run" SET "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = $1 AND "lease_owner" = $2 AND "fence" = $3`;

export async function releaseLease(q: Queryable, p: RunClaim): Promise<void> {
  await q.query(RELEASE_LEASE_SQL, [p.runId, p.owner, p.fence]);
}

/** Hands a claim's lease back and wakes the other replicas' claim when it did. */
export const RELEASE_LEASE_NOTIFY_SQL = `WITH h AS (UPDATE "run" SET "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = $1 AND "lease_owner" = $2 AND "fence" = $3 RETURNING 1)
           SELECT (SELECT count(*) FROM (SELECT pg_notify('${RUNS_CHANNEL}', '') WHERE EXISTS (SELECT 1 FROM h)) x) AS "notified"`;

export async function releaseLeaseAndNotify(q: Queryable, p: RunClaim): Promise<void> {
  await q.query(RELEASE_LEASE_NOTIFY_SQL, [p.runId, p.owner, p.fence]);
}

/** Hands back every lease of an owner on unfinished runs (shutdown), waking the other replicas when there were any. */
export const RELEASE_OWNER_LEASES_SQL = `WITH h AS (UPDATE "run" SET "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "lease_owner" = $1 AND "status" NOT IN ('completed', 'failed', 'cancelled') RETURNING 1)
         SELECT (SELECT count(*) FROM h) AS "n", (SELECT count(*) FROM (SELECT pg_notify('${RUNS_CHANNEL}', '') WHERE EXISTS (SELECT 1 FROM h)) x) AS "notified"`;

export async function releaseOwnerLeases(q: Queryable, p: { owner: string }): Promise<void> {
  await q.query(RELEASE_OWNER_LEASES_SQL, [p.owner]);
}

/** Makes a run parked on a gate claimable again (inside the deciding transaction). */
export const REOPEN_RUN_SQL = `UPDATE "run" SET "status" = 'running', "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = $1 AND "status" = ANY($2::text[])`;

export async function reopenRun(q: Queryable, p: { runId: string }): Promise<void> {
  await q.query(REOPEN_RUN_SQL, [p.runId, WAITING_STATUSES]);
}

/** Locks the run row (before its gates, as a cancel does: a resolve racing a cancel waits for it). */
export const LOCK_RUN_SQL = `SELECT 1 FROM "run" WHERE "id" = $1 FOR UPDATE`;

export async function lockRun(q: Queryable, p: { runId: string }): Promise<void> {
  await q.query(LOCK_RUN_SQL, [p.runId]);
}

/** The node rows of a run (a claim resuming it). */
export function loadRunNodes(m: Pick<EntityManager, 'getRepository'>, p: { runId: string }): Promise<RunNodeEntity[]> {
  return m.getRepository(RunNodeEntity).find({ where: { runId: p.runId } });
}

/** The outputs a run of the same tenant recorded for its completed nodes (the source of a replay). */
export const RECORDED_OUTCOMES_SQL = `SELECT "node_id", "outputs" FROM "run_node" WHERE "run_id" = $1 AND "tenant" = $2 AND "status" = 'completed'`;

export async function recordedOutcomes(q: Queryable, p: { runId: string; tenant: string }): Promise<Map<string, Record<string, unknown>>> {
  const rows = (await q.query(RECORDED_OUTCOMES_SQL, [p.runId, p.tenant])) as Array<{ node_id: string; outputs: Record<string, unknown> | null }>;
  return new Map(rows.map((r) => [r.node_id, r.outputs ?? {}]));
}

/** Whether an event was written (a flush whose answer was lost may have committed). */
export const EVENT_EXISTS_SQL = `SELECT 1 FROM "event" WHERE "id" = $1`;

export async function eventExists(q: Queryable, p: { eventId: string }): Promise<boolean> {
  return ((await q.query(EVENT_EXISTS_SQL, [p.eventId])) as unknown[]).length > 0;
}

/** One flush of a claim: the run row, its node rows and its events. */
export interface FlushParams extends RunClaim {
  tenant: string;
  workspace: string | null;
  leaseMs: number;
  nodeExecutions: number;
  costUsd: number;
  update: RunUpdate;
  writes: NodeWrite[];
  events: BatchEvent[];
  /** The events' ids, fixed by the caller (a retry recognises a lost but committed attempt by them). */
  eventIds: string[];
}

/** What the fence saw: false `fenced` when the claim no longer holds the lease (nothing was written). */
export interface FlushResult {
  fenced: boolean;
  cancel: boolean | null;
  pause: PauseRequest | null;
}

/**
 * The one write path of a claim, as a single statement whose first part is the fence (the run row,
 * updated only while this claim holds the lease); the node rows and the events (the event log's
 * insert) are written only when the fence matched, and a node row already `completed` aborts the
 * whole statement (nothing is written). Last write per node wins within one flush.
 */
export function flushStatement(f: FlushParams): { sql: string; params: unknown[] } {
  const u = f.update;
  const params: unknown[] = [];
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const runId = p(f.runId);
  const where = `"id" = ${runId}::uuid AND "lease_owner" = ${p(f.owner)} AND "fence" = ${p(f.fence)}::int`;
  const sets = [`"node_executions" = ${p(f.nodeExecutions)}::int`, `"cost_usd" = ${p(f.costUsd)}::float8`, `"started_at" = COALESCE("started_at", now())`];
  if (u.terminal || u.release) sets.push(`"lease_expires_at" = NULL`, `"lease_owner" = NULL`);
  else sets.push(`"lease_expires_at" = now() + (${p(f.leaseMs)}::int * interval '1 millisecond')`);
  if (u.status) sets.push(`"status" = ${p(u.status)}::text`);
  // A run whose cancellation was requested stays `cancelling` until it is finished.
  else sets.push(`"status" = CASE WHEN "cancel_requested" THEN 'cancelling' ELSE 'running' END`);
  if (u.paused) sets.push(`"metadata" = jsonb_set("metadata", '{pause,pausedAt}', to_jsonb(to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))`);
  if (u.current !== undefined) sets.push(`"current_node_id" = ${p(u.current)}::text`);
  if (u.outputs) sets.push(`"outputs" = ${p(JSON.stringify(u.outputs))}::jsonb`);
  if (u.error) sets.push(`"error" = ${p(JSON.stringify(u.error))}::jsonb`);
  if (u.terminal) sets.push(`"completed_at" = now()`);
  if (u.terminal && u.current === undefined) sets.push(`"current_node_id" = NULL`);
  const ctes = [`f AS (UPDATE "run" SET ${sets.join(', ')} WHERE ${where} RETURNING "cancel_requested", "metadata"->'pause' AS "pause", "followed_until" > now() AS "followed")`];
  const byNode = new Map<string, NodeWrite>();
  for (const w of f.writes) byNode.set(w.nodeId, w);
  if (byNode.size) {
    // Bound only when used: a parameter no statement part reads has no type PostgreSQL can infer.
    const tenant = p(f.tenant);
    const rows = [...byNode.values()].map(
      (w) =>
        `(${p(w.nodeId)}::text, ${p(w.typeId)}::text, ${p(w.status)}::text, ${p(w.attempt)}::int, ${p(w.outputs === undefined || w.outputs === null ? null : JSON.stringify(w.outputs))}::jsonb, ${p(w.error ? JSON.stringify(w.error) : null)}::jsonb, ${p(w.gateId ?? null)}::uuid)`,
    );
    ctes.push(`nodes AS (INSERT INTO "run_node" ("run_id", "node_id", "tenant", "type_id", "status", "attempt", "outputs", "error", "gate_id", "updated_at")
        SELECT ${runId}::uuid, v.node_id, ${tenant}::text, v.type_id, v.status, v.attempt, v.outputs, v.error, v.gate_id, now()
        FROM (VALUES ${rows.join(', ')}) AS v(node_id, type_id, status, attempt, outputs, error, gate_id) WHERE EXISTS (SELECT 1 FROM f)
        ON CONFLICT ("run_id", "node_id") DO UPDATE SET "status" = EXCLUDED."status", "attempt" = EXCLUDED."attempt", "outputs" = EXCLUDED."outputs",
          "error" = EXCLUDED."error", "gate_id" = COALESCE(EXCLUDED."gate_id", "run_node"."gate_id"), "updated_at" = now()
        WHERE "run_node"."status" <> 'completed' RETURNING 1)`);
  }
  let notify = '';
  if (f.events.length) {
    const scope = { tenant: f.tenant, workspace: f.workspace ?? undefined };
    ctes.push(...eventInsertCtes(p, eventRows(f.events.map((e) => ({ scope, streamId: f.runId, ...e })), f.eventIds), 'EXISTS (SELECT 1 FROM f)'));
    // A follower on another replica (run.followed_until) is notified by this very statement; nobody else is.
    ctes.push(`nt AS (SELECT pg_notify('${EVENTS_CHANNEL}', ${runId}::text) FROM f WHERE f."followed")`);
    notify = `, (SELECT count(*) FROM nt) AS "notified"`;
  }
  // A node row that was already completed leaves `nodes` short: divide by zero to abort the statement.
  const guard = byNode.size ? `, 1 / (CASE WHEN NOT EXISTS (SELECT 1 FROM f) OR (SELECT count(*) FROM nodes) = ${p(byNode.size)}::bigint THEN 1 ELSE 0 END) AS "guard"` : '';
  return {
    sql: `WITH ${ctes.join(',\n')} SELECT (SELECT count(*)::int FROM f) AS "fenced", (SELECT "cancel_requested" FROM f) AS "cancel", (SELECT "pause" FROM f) AS "pause"${notify}${guard}`,
    params,
  };
}

export async function flushRun(q: Queryable, f: FlushParams): Promise<FlushResult> {
  const { sql, params } = flushStatement(f);
  let rows: Array<{ fenced: number; cancel: boolean | null; pause: PauseRequest | null }>;
  try {
    rows = (await q.query(sql, params)) as typeof rows;
  } catch (e) {
    if (/division by zero/.test((e as Error).message)) throw new Error('a node of this run was already completed');
    throw e;
  }
  return { fenced: !!rows[0]?.fenced, cancel: rows[0]?.cancel ?? null, pause: rows[0]?.pause ?? null };
}

/** A transaction of an execution (a suspension: the run row, its gates, one flush). */
export interface RunStoreTx {
  readonly manager: EntityManager;
  lockRun(p: { runId: string }): Promise<void>;
  flush(f: FlushParams): Promise<FlushResult>;
}

/** The statements one execution runs, bound to a data source (a fake stands in for it in unit tests). */
export interface RunStore {
  flush(f: FlushParams): Promise<FlushResult>;
  eventExists(p: { eventId: string }): Promise<boolean>;
  renew(p: RunClaim & { leaseMs: number }): Promise<{ cancel_requested: boolean; pause: PauseRequest | null } | undefined>;
  loadNodes(p: { runId: string }): Promise<RunNodeEntity[]>;
  recordedOutcomes(p: { runId: string; tenant: string }): Promise<Map<string, Record<string, unknown>>>;
  transaction<T>(work: (tx: RunStoreTx) => Promise<T>): Promise<T>;
}

export function runStoreOn(ds: DataSource): RunStore {
  const tx = (m: EntityManager): RunStoreTx => ({ manager: m, lockRun: (p) => lockRun(m, p), flush: (f) => flushRun(m, f) });
  return {
    flush: (f) => flushRun(ds, f),
    eventExists: (p) => eventExists(ds, p),
    renew: (p) => renewLease(ds, p),
    loadNodes: (p) => loadRunNodes(ds.manager, p),
    recordedOutcomes: (p) => recordedOutcomes(ds, p),
    transaction: (work) => ds.transaction((m) => work(tx(m))),
  };
}
