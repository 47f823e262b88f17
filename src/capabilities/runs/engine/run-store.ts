import type { DataSource, EntityManager } from 'typeorm';
import type { InterruptRequest } from '@openwop-host/plugin-sdk';
import { EVENTS_CHANNEL, RUNS_CHANNEL } from '../../../platform/database/database-notifications';
import { BatchEvent, eventInsertCtes, eventInsertValues, EventRow, eventRows, readForm, RunEventView, STREAM_KEY, toView } from '../../../platform/events/event-log.service';
import { preparedStatement, runPrepared } from '../../../platform/database/prepared-statement';
import type { LeaseStore } from '../../../platform/leases/lease-keeper';
import { FlushBatcher } from './run-flush-batcher';
import { claimable, fairClaimCtes } from './run-claim-sql';
import { RunNodeEntity, RunNodeStatus } from '../run-node.entity';
import type { WorkflowDefinition } from '../workflow-definition';
import { claimedColumn } from './run-references';
import { InvariantViolation } from '../../../platform/errors/internal-fault';

/**
 * Every statement of the run engine, each a function of the connection it runs on (the data source,
 * or the manager of the caller's transaction) and typed parameters. The SQL texts are snapshotted
 * (run-store.spec.ts), so a changed statement shows in review.
 */

/** What a statement runs on: the data source, or a transaction's manager. */
export type Queryable = Pick<EntityManager, 'query'>;

/** The run status of a run suspended on an interrupt of each kind (run-snapshot.schema.json). */
export const WAITING_STATUS: Record<InterruptRequest['kind'] | 'credential', string> = {
  approval: 'waiting-approval',
  clarification: 'waiting-input',
  'external-event': 'waiting-external',
  credential: 'waiting-input', // RFC 0199 §C.5: no status of its own, the kind tells it apart
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

const CLAIMABLE = claimable('');

/** The columns of a claimed run (ClaimedRow), named: a column another replica adds changes no prepared claim (some read through keys: run-references.ts). */
const CLAIMED_COLUMNS = ['id', 'tenant', 'workspace', 'principal', 'status', 'workflow_id', 'definition', 'inputs', 'configurable', 'scopes', 'fence', 'cancel_requested', 'node_executions', 'cost_usd', 'started_at', 'trace_parent', 'trace_state', 'metadata'];
export const returning = (alias: string) => CLAIMED_COLUMNS.map((c) => claimedColumn(alias, c)).join(', ');

/**
 * Claims claimable runs for owner $1, leased for $2 ms, at most $3 of them, shared fairly between the
 * tenants with backlogs and at most $4 active runs per tenant (NULL: no cap): run-claim-sql.ts. Each
 * tenant's part is read in order from an index (run_claim_tenant_idx) instead of sorting a backlog.
 * The locked rows are updated by the tuple ids the claim locked (a TID scan: no join to the table,
 * which a plan made while it was small turned into a scan of all of it).
 */
export const CLAIM_RUNS_SQL = `WITH RECURSIVE ${fairClaimCtes('c', { limit: '$3::int', cap: '$4::int' })}
  UPDATE "run" r SET "lease_owner" = $1, "lease_expires_at" = now() + ($2::int * interval '1 millisecond'), "fence" = r."fence" + 1
  WHERE r."ctid" = ANY(ARRAY(SELECT "ctid" FROM c)) RETURNING ${returning('r.')}`;
const CLAIM_RUNS = preparedStatement('run_claim_many', CLAIM_RUNS_SQL);

/**
 * The oldest-first claim, used while fair claims are off (OPENWOP_FAIR_CLAIMS, the default): the first
 * entries of the partial index `run_claimable_idx`, whatever their tenant. Cheaper than the fair claim
 * (one index range, no per-tenant pass): about 15% more runs a second on one tenant (docs/benchmarks.md).
 */
export const CLAIM_RUNS_FIFO_SQL = `WITH c AS (SELECT "ctid" FROM "run" WHERE ${CLAIMABLE} ORDER BY "created_at" LIMIT $3 FOR UPDATE SKIP LOCKED)
  UPDATE "run" r SET "lease_owner" = $1, "lease_expires_at" = now() + ($2::int * interval '1 millisecond'), "fence" = r."fence" + 1
  WHERE r."ctid" = ANY(ARRAY(SELECT "ctid" FROM c)) RETURNING ${returning('r.')}`;
const CLAIM_RUNS_FIFO = preparedStatement('run_claim_many_fifo', CLAIM_RUNS_FIFO_SQL);

export async function claimRuns(q: DataSource, p: { owner: string; leaseMs: number; limit: number; tenantCap?: number; fair?: boolean }): Promise<ClaimedRow[]> {
  if (!p.fair && !p.tenantCap) return runPrepared<ClaimedRow>(q, CLAIM_RUNS_FIFO, [p.owner, p.leaseMs, p.limit]);
  return runPrepared<ClaimedRow>(q, CLAIM_RUNS, [p.owner, p.leaseMs, p.limit, p.tenantCap || null]);
}

/** Claims one run (created or released here) when it is claimable. */
export const CLAIM_RUN_SQL = `UPDATE "run" SET "lease_owner" = $2, "lease_expires_at" = now() + ($3::int * interval '1 millisecond'), "fence" = "fence" + 1
             WHERE "id" = $1 AND ${CLAIMABLE} RETURNING ${returning('')}`;
const CLAIM_RUN = preparedStatement('run_claim_one', CLAIM_RUN_SQL);

export async function claimRun(q: DataSource, p: { runId: string; owner: string; leaseMs: number }): Promise<ClaimedRow | undefined> {
  return (await runPrepared<ClaimedRow>(q, CLAIM_RUN, [p.runId, p.owner, p.leaseMs]))[0];
}

/**
 * Extends the leases of owner $1's claims ($2 the runs, $3 their fences) by $4 ms, in one statement
 * for every run the replica executes (the lease keeper's renewal); answers the claims still held,
 * with what an operator asked for meanwhile. A claim missing from the answer lost its lease.
 */
export const RENEW_LEASES_SQL = `UPDATE "run" r SET "lease_expires_at" = now() + ($4::int * interval '1 millisecond')
  FROM unnest($2::uuid[], $3::int[]) AS k("id", "fence")
  WHERE r."id" = ANY($2::uuid[]) AND r."id" = k."id" AND r."fence" = k."fence" AND r."lease_owner" = $1
  RETURNING r."id"::text AS "id", r."cancel_requested", r."metadata"->'pause' AS "pause"`;
const RENEW_LEASES = preparedStatement('run_renew_leases', RENEW_LEASES_SQL);

export async function renewLeases(q: DataSource, p: { owner: string; claims: Array<{ runId: string; fence: number }>; leaseMs: number }): Promise<Array<{ id: string; cancel_requested: boolean; pause: PauseRequest | null }>> {
  return runPrepared(q, RENEW_LEASES, [p.owner, p.claims.map((c) => c.runId), p.claims.map((c) => c.fence), p.leaseMs]);
}

/**
 * The run engine's lease store for the platform's lease keeper: renewals of the claims the replica
 * executes (each with the fence it claimed under, `fenceOf`), reading an operator's cancel or pause
 * besides; release hands back the unfinished runs at shutdown.
 */
export function runLeaseStore(ds: DataSource, fenceOf: (runId: string) => number | null | undefined): LeaseStore<string, { cancelRequested: boolean; pause: PauseRequest | null }> {
  return {
    renew: async (owner, keys, leaseMs) => {
      const claims: Array<{ runId: string; fence: number }> = [];
      const out = new Map<string, { cancelRequested: boolean; pause: PauseRequest | null }>();
      for (const runId of keys) {
        const fence = fenceOf(runId);
        // null: a run not inserted yet (its insert writes its lease), held as it is.
        if (fence === null) out.set(runId, { cancelRequested: false, pause: null });
        else if (fence !== undefined) claims.push({ runId, fence });
      }
      const held = claims.length ? await renewLeases(ds, { owner, claims, leaseMs }) : [];
      for (const h of held) out.set(h.id, { cancelRequested: h.cancel_requested, pause: h.pause });
      return out;
    },
    release: (owner, runIds) => releaseLeases(ds, { owner, runIds }),
  };
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

/** Hands back owner $1's leases of the unfinished runs $2 (shutdown), waking the other replicas when there were any. */
export const RELEASE_LEASES_SQL = `WITH h AS (UPDATE "run" SET "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = ANY($2::uuid[]) AND "lease_owner" = $1 AND "status" NOT IN ('completed', 'failed', 'cancelled') RETURNING 1)
         SELECT (SELECT count(*) FROM h) AS "n", (SELECT count(*) FROM (SELECT pg_notify('${RUNS_CHANNEL}', '') WHERE EXISTS (SELECT 1 FROM h)) x) AS "notified"`;

export async function releaseLeases(q: Queryable, p: { owner: string; runIds: string[] }): Promise<void> {
  await q.query(RELEASE_LEASES_SQL, [p.owner, p.runIds]);
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

/** The outputs a run of the tenant recorded for its completed nodes (a replay's source), reached through that run's row (node rows hold no tenant). */
export const RECORDED_OUTCOMES_SQL = `SELECT n."node_id", n."outputs" FROM "run" r JOIN "run_node" n ON n."run_id" = r."id" WHERE r."id" = $1 AND r."tenant" = $2 AND n."status" = 'completed'`;

export async function recordedOutcomes(q: Queryable, p: { runId: string; tenant: string }): Promise<Map<string, Record<string, unknown>>> {
  const rows = (await q.query(RECORDED_OUTCOMES_SQL, [p.runId, p.tenant])) as Array<{ node_id: string; outputs: Record<string, unknown> | null }>;
  return new Map(rows.map((r) => [r.node_id, r.outputs ?? {}]));
}

/** Whether an event of the run was written (a flush whose answer was lost may have committed): among the run's events, by the stream's key. */
export const EVENT_EXISTS_SQL = `SELECT 1 FROM "event" WHERE "stream_key" = (${STREAM_KEY('$1', '$2')}) AND "id" = $3`;

export async function eventExists(q: Queryable, p: { tenant: string; runId: string; eventId: string }): Promise<boolean> {
  return ((await q.query(EVENT_EXISTS_SQL, [p.tenant, p.runId, p.eventId])) as unknown[]).length > 0;
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
  /**
   * The run's events as written (their sequences and times), for followers waiting on this replica;
   * built only when asked (absent when nothing was written, or for a write recognised after a lost answer).
   */
  events?: () => RunEventView[];
}

/**
 * The one write path of the engine: the flushes of any number of claims (each of another run) as a
 * single statement of fixed text, prepared once per connection. Its first part is the fence (each
 * run row, updated only while its claim holds the lease); the node rows and the events (the event
 * log's insert) of a run are written only when its fence matched, and a node row already
 * `completed` aborts the whole statement (nothing is written). Parameters: $1 the runs' updates, $2
 * their node rows (the last write per node of a flush wins), $3..$6 the event insert's, $7 the runs' ids.
 *
 * The same statement claims up to $8 runs for owner $9 (lease $10 ms, tenant cap $11) as a claim pass would (the
 * slots the written runs free, refilled in the same round trip), never one of the runs it writes;
 * they come back as JSON in the `claimed` column of the first run's row.
 */
export const FLUSH_SQL = flushSql(true);
/** The same statement with the oldest-first folded claim (fair claims off): no tenant-cap parameter. */
export const FLUSH_FIFO_SQL = flushSql(false);

function flushSql(fair: boolean): string {
  let n = 2;
  const eventCtes = eventInsertCtes(() => `$${++n}`, [], `"stream_id" IN (SELECT "id"::text FROM f)`);
  return `WITH ${fair ? 'RECURSIVE ' : ''}u AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb) AS u("id" uuid, "owner" text, "fence" int, "node_executions" int, "cost_usd" float8, "lease_ms" int,
      "release" boolean, "status" text, "paused" boolean, "set_current" boolean, "current" text, "outputs" jsonb, "error" jsonb, "terminal" boolean, "nodes" int)
  ),
  f AS (
    UPDATE "run" r SET "node_executions" = u."node_executions", "cost_usd" = u."cost_usd", "started_at" = COALESCE(r."started_at", now()),
      "lease_expires_at" = CASE WHEN u."release" THEN NULL ELSE now() + (u."lease_ms" * interval '1 millisecond') END,
      "lease_owner" = CASE WHEN u."release" THEN NULL ELSE r."lease_owner" END,
      -- A run whose cancellation was requested stays \`cancelling\` until it is finished.
      "status" = COALESCE(u."status", CASE WHEN r."cancel_requested" THEN 'cancelling' ELSE 'running' END),
      "metadata" = CASE WHEN u."paused" THEN jsonb_set(r."metadata", '{pause,pausedAt}', to_jsonb(to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))) ELSE r."metadata" END,
      "current_node_id" = CASE WHEN u."set_current" THEN u."current" WHEN u."terminal" THEN NULL ELSE r."current_node_id" END,
      "outputs" = COALESCE(u."outputs", r."outputs"),
      "error" = COALESCE(u."error", r."error"),
      "completed_at" = CASE WHEN u."terminal" THEN now() ELSE r."completed_at" END
    -- The ids again as an array ($7): the run rows are found through the primary key whatever the
    -- planner guesses of the JSON's size (a guess of 100 rows made it scan a small table whole).
    FROM u WHERE r."id" = ANY($7::uuid[]) AND r."id" = u."id" AND r."lease_owner" = u."owner" AND r."fence" = u."fence"
    RETURNING r."id", r."cancel_requested", r."metadata"->'pause' AS "pause", r."followed_until" > now() AS "followed", u."nodes", r."tenant", r."lease_owner" IS NOT NULL AS "holds"
  ),
  nodes AS (
    INSERT INTO "run_node" ("run_id", "node_id", "status", "attempt", "outputs", "error", "gate_id", "updated_at")
    SELECT v."run_id", v."node_id", v."status", v."attempt", v."outputs", v."error", v."gate_id", now()
    FROM jsonb_to_recordset($2::jsonb) AS v("run_id" uuid, "node_id" text, "status" "run_node_status", "attempt" int, "outputs" jsonb, "error" jsonb, "gate_id" uuid)
    WHERE v."run_id" IN (SELECT "id" FROM f)
    ON CONFLICT ("run_id", "node_id") DO UPDATE SET "status" = EXCLUDED."status", "attempt" = EXCLUDED."attempt", "outputs" = EXCLUDED."outputs",
      "error" = EXCLUDED."error", "gate_id" = COALESCE(EXCLUDED."gate_id", "run_node"."gate_id"), "updated_at" = now()
    WHERE "run_node"."status" <> 'completed' OR EXCLUDED."status" = 'running' RETURNING 1
  ),
  ${eventCtes.join(',\n  ')},
  -- A follower on another replica (run.followed_until) is notified by this very statement; nobody else is.
  nt AS (SELECT pg_notify('${EVENTS_CHANNEL}', f."id"::text) FROM f WHERE f."followed"),
  ${fair ? fairClaimCtes('claim_ids', { limit: '$8::int', cap: '$11::int', exclude: '$7::uuid[]', written: 'f' }) : `claim_ids AS (SELECT "ctid" FROM "run" WHERE ${CLAIMABLE} AND "id" <> ALL($7::uuid[]) ORDER BY "created_at" LIMIT $8::int FOR UPDATE SKIP LOCKED)`},
  claimed AS (
    UPDATE "run" c SET "lease_owner" = $9::text, "lease_expires_at" = now() + ($10::int * interval '1 millisecond'), "fence" = c."fence" + 1
    WHERE c."ctid" = ANY(ARRAY(SELECT "ctid" FROM claim_ids)) RETURNING ${returning('c.')}
  )
  SELECT u."id"::text AS "id", f."id" IS NOT NULL AS "fenced", f."cancel_requested" AS "cancel", f."pause" AS "pause",
    (SELECT count(*) FROM nt) AS "notified", (SELECT count(*) FROM written) AS "events",
    -- On the first run's row only (the rows are many, the claimed runs and the written events one list each).
    CASE WHEN u."id" = ($7::uuid[])[1] THEN (SELECT coalesce(json_agg(claimed), '[]'::json) FROM claimed) END AS "claimed",
    CASE WHEN u."id" = ($7::uuid[])[1] THEN (SELECT json_agg(json_build_array(w."id", w."sequence", floor(extract(epoch FROM w."created_at") * 1000)::bigint)) FROM written w) END AS "written",
    -- A node row that was already completed (and is not started again, a loop's new execution) leaves \`nodes\` short: divide by zero to abort the statement.
    1 / (CASE WHEN (SELECT count(*) FROM nodes) = (SELECT coalesce(sum(f2."nodes"), 0) FROM f f2) THEN 1 ELSE 0 END) AS "guard"
  FROM u LEFT JOIN f ON f."id" = u."id"`;
}

export const FLUSH_STATEMENT = preparedStatement('run_flush', FLUSH_SQL);
const FLUSH_FIFO_STATEMENT = preparedStatement('run_flush_fifo', FLUSH_FIFO_SQL);

/** What a flush statement claims besides (nothing with limit 0). */
export interface FoldedClaim {
  owner: string;
  leaseMs: number;
  limit: number;
  /** The claimer's wake-up count when it was taken (see RunClaimer). */
  epoch?: number;
  /** The per-tenant cap of active runs (OPENWOP_TENANT_MAX_ACTIVE_RUNS; 0 or absent: none). */
  tenantCap?: number;
  /** Share the claim between tenants (OPENWOP_FAIR_CLAIMS, or a tenant cap); else oldest first. */
  fair?: boolean;
}

const NO_CLAIM: FoldedClaim = { owner: '', leaseMs: 0, limit: 0 };

/** The values of FLUSH_SQL for the flushes of distinct runs. */
export function flushValues(fs: FlushParams[], claim: FoldedClaim = NO_CLAIM): unknown[] {
  return flushStatementValues(fs, claim).values;
}

/** One flush's rows as a statement sends them: its run's update, its node rows (the last write per node wins), its event rows and their JSON. */
export function flushRows(f: FlushParams): { run: Record<string, unknown>; nodes: Array<Record<string, unknown>>; events: EventRow[]; eventJson: string } {
  const u = f.update;
  const byNode = new Map<string, NodeWrite>();
  for (const w of f.writes) byNode.set(w.nodeId, w);
  const run = {
    id: f.runId,
    owner: f.owner,
    fence: f.fence,
    node_executions: f.nodeExecutions,
    cost_usd: f.costUsd,
    lease_ms: f.leaseMs,
    release: !!(u.terminal || u.release),
    status: u.status ?? null,
    paused: !!u.paused,
    set_current: u.current !== undefined,
    current: u.current ?? null,
    outputs: u.outputs ?? null,
    error: u.error ?? null,
    terminal: !!u.terminal,
    nodes: byNode.size,
  };
  const nodes = [...byNode.values()].map((w) => ({ run_id: f.runId, node_id: w.nodeId, status: w.status, attempt: w.attempt, outputs: w.outputs ?? null, error: w.error ?? null, gate_id: w.gateId ?? null }));
  const scope = { tenant: f.tenant, workspace: f.workspace ?? undefined };
  const events = eventRows(f.events.map((e) => ({ scope, streamId: f.runId, ...e })), f.eventIds);
  return { run, nodes, events, eventJson: JSON.stringify(events) };
}

/** The values, and each run's event rows as the JSON they were sent as (what its followers are handed once written). */
function flushStatementValues(fs: FlushParams[], claim: FoldedClaim): { values: unknown[]; eventJson: string[] } {
  const runs: unknown[] = [];
  const nodes: unknown[] = [];
  const events: EventRow[] = [];
  const eventJson: string[] = [];
  for (const f of fs) {
    const rows = flushRows(f);
    runs.push(rows.run);
    nodes.push(...rows.nodes);
    events.push(...rows.events);
    eventJson.push(rows.eventJson);
  }
  // The statement's rows are the runs' rows, in order, as sent: one JSON text, each run's part kept.
  const all = `[${eventJson.filter((j) => j !== '[]').map((j) => j.slice(1, -1)).join(',')}]`;
  return { values: [JSON.stringify(runs), JSON.stringify(nodes), ...eventInsertValues(events, all), fs.map((f) => f.runId), claim.limit, claim.owner, claim.leaseMs, claim.tenantCap || null], eventJson };
}

/** A node of a run in the statement was already completed: nothing of the statement was written. */
export class NodeAlreadyCompleted extends InvariantViolation {
  constructor() {
    super('a node of this run was already completed');
  }
}

/** Writes the flushes of distinct runs in one statement (claiming up to `claim.limit` runs besides): the results in their order. */
export async function flushRuns(q: DataSource | EntityManager, fs: FlushParams[], claim: FoldedClaim = NO_CLAIM): Promise<{ results: FlushResult[]; claimed: ClaimedRow[] }> {
  let rows: Array<{ id: string; fenced: boolean; cancel: boolean | null; pause: PauseRequest | null; claimed: ClaimedRow[] | null; written: Array<[string, string, string]> | null }>;
  const sent = flushStatementValues(fs, claim);
  try {
    // Oldest first unless fair claims are on: that statement has no tenant-cap parameter ($11).
    const fair = !!(claim.fair || claim.tenantCap);
    rows = await runPrepared(q, fair ? FLUSH_STATEMENT : FLUSH_FIFO_STATEMENT, fair ? sent.values : sent.values.slice(0, 10));
  } catch (e) {
    if (/division by zero/.test((e as Error).message)) throw new NodeAlreadyCompleted();
    throw e;
  }
  const byId = new Map(rows.map((r) => [r.id, r]));
  // JSON carries the claimed rows' timestamps as text.
  const claimed = (rows.find((r) => r.claimed)?.claimed ?? []).map((c) => ({ ...c, started_at: c.started_at === null ? null : new Date(c.started_at) }));
  const written = writtenEvents(rows.find((r) => r.written)?.written);
  return {
    results: fs.map((f, i) => {
      const r = byId.get(f.runId);
      const result: FlushResult = { fenced: !!r?.fenced, cancel: r?.cancel ?? null, pause: r?.pause ?? null };
      if (r?.fenced && f.events.length) result.events = () => writtenViews(sent.eventJson[i], written);
      return result;
    }),
    claimed,
  };
}

/** The `written` column of a write: each event as [id, sequence, milliseconds since the epoch] (the time as the log answers it, to the millisecond). */
export function writtenEvents(written: Array<[string, string, string]> | null | undefined): Map<string, { sequence: number; at: number }> {
  return new Map((written ?? []).map(([id, seq, ms]) => [id, { sequence: Number(seq), at: Number(ms) }]));
}

/** A run's events as a read of the log would answer them: the rows as sent, with their sequences and times as written. */
export function writtenViews(json: string, written: Map<string, { sequence: number; at: number }>): RunEventView[] {
  return (JSON.parse(json) as EventRow[]).map((r) => {
    const w = written.get(r.id);
    if (!w) throw new InvariantViolation(`event ${r.id} was not written by the statement that wrote its run`);
    return toView({ id: r.id, streamId: r.stream_id, ...readForm(r.code, r.type, r.payload, r.node_id), createdAt: new Date(w.at), sequence: String(w.sequence), correlationId: r.correlation_id, causationId: r.causation_id, nodeId: r.node_id });
  });
}

export async function flushRun(q: DataSource | EntityManager, f: FlushParams): Promise<FlushResult> {
  return (await flushRuns(q, [f])).results[0];
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
  eventExists(p: { tenant: string; runId: string; eventId: string }): Promise<boolean>;
  loadNodes(p: { runId: string }): Promise<RunNodeEntity[]>;
  recordedOutcomes(p: { runId: string; tenant: string }): Promise<Map<string, Record<string, unknown>>>;
  transaction<T>(work: (tx: RunStoreTx) => Promise<T>): Promise<T>;
  /** The reason its cancel request recorded (`metadata.cancelReason`), for the run's `run.cancelled`. */
  cancelReason?(p: { runId: string }): Promise<string | undefined>;
}

/**
 * How the engine folds its claims into its writes: `take` answers how many runs a statement of
 * these flushes may claim (0: none), `give` receives what it claimed (after it committed, before the
 * flushes' results are handed back), or nothing (`failed`) when the statement failed.
 */
export interface FoldedClaims {
  take(batch: FlushParams[]): FoldedClaim;
  give(claimed: ClaimedRow[], claim: FoldedClaim, sentAt: number, failed?: boolean): void;
}

export function runStoreOn(ds: DataSource, opts: { maxInFlight: number; maxBatch: number; claims?: FoldedClaims & { urgent?(runId: string): boolean } } = { maxInFlight: 2, maxBatch: 64 }): RunStore {
  const tx = (m: EntityManager): RunStoreTx => ({ manager: m, lockRun: (p) => lockRun(m, p), flush: (f) => flushRun(m, f) });
  // Flushes of concurrent runs leave as one statement (group commit), claiming for the slots they free.
  const batcher = new FlushBatcher(async (fs, alone) => {
    const claim = !alone && opts.claims ? opts.claims.take(fs) : NO_CLAIM;
    const sentAt = Date.now();
    let out: { results: FlushResult[]; claimed: ClaimedRow[] };
    try {
      out = await flushRuns(ds, fs, claim);
    } catch (e) {
      if (claim.limit) opts.claims?.give([], claim, sentAt, true);
      throw e;
    }
    if (claim.limit) opts.claims?.give(out.claimed, claim, sentAt);
    return out.results;
  }, { ...opts, urgent: (f) => !!opts.claims?.urgent?.(f.runId) });
  return {
    flush: (f) => batcher.flush(f),
    eventExists: (p) => eventExists(ds, p),
    loadNodes: (p) => loadRunNodes(ds.manager, p),
    recordedOutcomes: (p) => recordedOutcomes(ds, p),
    transaction: (work) => ds.transaction((m) => work(tx(m))),
    cancelReason: async (p) => ((await ds.query(`SELECT "metadata"->>'cancelReason' AS "reason" FROM "run" WHERE "id" = $1`, [p.runId])) as Array<{ reason: string | null }>)[0]?.reason ?? undefined,
  };
}
