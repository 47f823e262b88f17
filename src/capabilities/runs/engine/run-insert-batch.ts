import type { DataSource } from 'typeorm';
import { preparedStatement, runPrepared } from '../../../platform/database/prepared-statement';
import { eventInsertCtes, eventInsertValues, EventRow } from '../../../platform/events/event-log.service';
import { InvariantViolation } from '../../../platform/errors/internal-fault';
import { FlushParams, FlushResult, flushRows, writtenEvents, writtenViews } from './run-store';
import { CHAIN_CATALOG_VERSION_SQL } from '../workflow-resolver.service';
import { definitionRef } from '../run-definition.entity';
import { principalRef } from '../run-principal.entity';
import { announcement } from './run-newcomer-claim';
import { ON_KEY_TAKEN, REQUEST_COLUMNS, RunInsertValues } from './run-insert';

/**
 * The inserts of many created runs in one statement (one round trip, one plan, one commit): the
 * statements of run-insert.ts for a list of runs, each row checked on its own (its tenant's catalog
 * version, its Idempotency-Key: a key taken, even by an earlier row of the same statement, leaves
 * that row unwritten). What they do not cover goes alone through run-insert.ts: a tenant's first run
 * taking the newcomers' reserve (the check "no run of the tenant" sees the statement's snapshot, so
 * two such rows of one tenant would both pass it), an `X-Dedup` run (its conflict is an error that
 * names it), an insert inside a caller's transaction.
 *
 * The rows are inserted in (tenant, workspace, key) order, so two statements with the same keys
 * wait on each other in one order instead of deadlocking.
 */

/** The columns of one request's record ($1, a JSON array). */
const RECORD = `jsonb_to_recordset($1::jsonb) AS r("ord" int, "id" uuid, "tenant" text, "workspace" text, "principal" text, "metadata" jsonb, "workflow_id" text,
  "definition" jsonb, "inputs" jsonb, "configurable" jsonb, "scopes" text[], "idempotency_key" text, "request_hash" text, "scope_id" text, "dedup_scope" text,
  "trace_parent" text, "trace_state" text, "catalog_version" bigint, "create_response" jsonb, "owner" text, "lease_ms" int)`;
/** REQUEST_COLUMNS' values from a record `r` (as run-insert.ts's REQUEST_VALUES from its parameters). */
const ROW_VALUES = `r."id", r."tenant", r."workspace", coalesce(r."workspace", ''), r."principal", 'workflow', r."metadata" - 'subject', r."workflow_id",
  ${definitionRef('r."tenant"', 'r."definition"')}, r."inputs", r."configurable", ${principalRef('r."tenant"', `r."metadata" -> 'subject'`, 'r."scopes"')},
  r."idempotency_key", r."request_hash", r."scope_id", r."dedup_scope", r."trace_parent", r."trace_state", r."create_response"`;
/** Each record with whether its tenant's chains are still those it was planned from. */
const RECORDS = `r AS (SELECT * FROM ${RECORD}),
  v AS MATERIALIZED (SELECT r."id", r."ord", ${CHAIN_CATALOG_VERSION_SQL('r."tenant"')} = r."catalog_version" AS "current" FROM r)`;
const ORDER = `ORDER BY r."tenant", coalesce(r."workspace", ''), r."idempotency_key", r."id"`;

/**
 * Pending runs: each claimed for its record's `owner` (lease `lease_ms`, fence 1) or, without an
 * owner, announced to the replicas. One row per record: `current`, `inserted`.
 */
export const INSERT_PENDING_BATCH_SQL = `WITH ${RECORDS},
  ins AS (
    INSERT INTO "run" (${REQUEST_COLUMNS}, "status", "lease_owner", "lease_expires_at", "fence")
    SELECT ${ROW_VALUES}, 'pending', r."owner",
      CASE WHEN r."owner" IS NULL THEN NULL ELSE now() + (r."lease_ms" * interval '1 millisecond') END, CASE WHEN r."owner" IS NULL THEN 0 ELSE 1 END
    FROM r JOIN v ON v."id" = r."id" WHERE v."current" ${ORDER}
    ${ON_KEY_TAKEN} RETURNING "id", "tenant", "lease_owner"
  ),
  n AS (SELECT ${announcement('ins."id"', 'ins."tenant"')} FROM ins WHERE ins."lease_owner" IS NULL)
  SELECT v."ord", v."current", ins."id" IS NOT NULL AS "inserted", (SELECT count(*) FROM n) AS "notified"
  FROM v LEFT JOIN ins ON ins."id" = v."id" ORDER BY v."ord"`;

function writtenBatchSql(): string {
  let n = 3;
  const eventCtes = eventInsertCtes(() => `$${++n}`, [], `"stream_id" IN (SELECT "id"::text FROM ins)`);
  return `WITH ${RECORDS},
    u AS (
      SELECT * FROM jsonb_to_recordset($2::jsonb) AS u("id" uuid, "owner" text, "fence" int, "node_executions" int, "cost_usd" float8, "lease_ms" int,
        "release" boolean, "status" text, "set_current" boolean, "current" text, "outputs" jsonb, "error" jsonb, "terminal" boolean)
    ),
    ins AS (
      INSERT INTO "run" (${REQUEST_COLUMNS}, "status", "lease_owner", "lease_expires_at", "fence", "node_executions", "cost_usd", "started_at", "current_node_id", "outputs", "error", "completed_at")
      SELECT ${ROW_VALUES}, coalesce(u."status", 'running'),
        CASE WHEN u."release" THEN NULL ELSE u."owner" END, CASE WHEN u."release" THEN NULL ELSE now() + (u."lease_ms" * interval '1 millisecond') END, u."fence",
        u."node_executions", u."cost_usd", now(), CASE WHEN u."set_current" THEN u."current" END, u."outputs", u."error", CASE WHEN u."terminal" THEN now() END
      FROM r JOIN v ON v."id" = r."id" JOIN u ON u."id" = r."id" WHERE v."current" ${ORDER}
      ${ON_KEY_TAKEN} RETURNING "id"
    ),
    nodes AS (
      INSERT INTO "run_node" ("run_id", "node_id", "status", "attempt", "outputs", "error", "gate_id", "updated_at")
      SELECT n."run_id", n."node_id", n."status", n."attempt", n."outputs", n."error", n."gate_id", now()
      FROM jsonb_to_recordset($3::jsonb) AS n("run_id" uuid, "node_id" text, "status" "run_node_status", "attempt" int, "outputs" jsonb, "error" jsonb, "gate_id" uuid)
      WHERE n."run_id" IN (SELECT "id" FROM ins)
      RETURNING 1
    ),
    ${eventCtes.join(',\n    ')}
    SELECT v."ord", v."current", ins."id" IS NOT NULL AS "inserted", (SELECT count(*) FROM nodes) AS "nodes",
      CASE WHEN v."ord" = 0 THEN (SELECT json_agg(json_build_array(w."id", w."sequence", floor(extract(epoch FROM w."created_at") * 1000)::bigint)) FROM written w) END AS "written"
    FROM v LEFT JOIN ins ON ins."id" = v."id" ORDER BY v."ord"`;
}

/**
 * Runs inserted with their first write (started before their insert, fence 1): each row as its
 * write leaves it, its node rows and its events, only for the records inserted.
 */
export const INSERT_WRITTEN_BATCH_SQL = writtenBatchSql();

const INSERT_PENDING_BATCH = preparedStatement('run_insert_pending_batch', INSERT_PENDING_BATCH_SQL);
const INSERT_WRITTEN_BATCH = preparedStatement('run_insert_written_batch', INSERT_WRITTEN_BATCH_SQL);

/** One request's record: the JSON text of its values, the definition and the stored answer embedded as they are (already JSON). */
function record(ord: number, v: RunInsertValues, claim?: { owner: string; leaseMs: number } | null): string {
  const plain = JSON.stringify({
    ord,
    id: v.runId,
    tenant: v.tenant,
    workspace: v.workspace,
    principal: v.principal,
    metadata: v.metadata,
    workflow_id: v.workflowId,
    inputs: v.inputs,
    configurable: v.configurable,
    scopes: v.scopes,
    idempotency_key: v.idempotencyKey,
    request_hash: v.requestHash,
    scope_id: v.scopeId,
    dedup_scope: v.dedupScope,
    trace_parent: v.traceParent,
    trace_state: v.traceState,
    catalog_version: v.catalogVersion,
    owner: claim?.owner ?? null,
    lease_ms: claim?.leaseMs ?? 0,
  });
  return `${plain.slice(0, -1)},"definition":${v.definitionText},"create_response":${v.createResponse ?? 'null'}}`;
}

/** A pending run to insert in a batch: claimed under `claim`, or announced without one. */
export interface PendingInsert {
  values: RunInsertValues;
  claim: { owner: string; leaseMs: number } | null;
}

/** Inserts pending runs in one statement; per run, in their order: `current`, `id` (null: not inserted), `claimed`. */
export async function insertPendingRuns(q: DataSource, items: PendingInsert[]): Promise<Array<{ current: boolean; id: string | null; claimed: boolean }>> {
  const rows = await runPrepared<{ ord: number; current: boolean; inserted: boolean }>(q, INSERT_PENDING_BATCH, [`[${items.map((it, i) => record(i, it.values, it.claim)).join(',')}]`]);
  if (rows.length !== items.length) throw new InvariantViolation('the batched insert answered another number of runs than it was sent');
  return items.map((it, i) => {
    const row = rows[i];
    return { current: row.current, id: row.inserted ? it.values.runId : null, claimed: row.inserted && !!it.claim };
  });
}

/** A run to insert with its first write (see insertWrittenRun). */
export interface WrittenInsert {
  values: RunInsertValues;
  flush: FlushParams;
}

/** Inserts runs with their first writes in one statement; per run, in their order, what insertWrittenRun answers for it alone. */
export async function insertWrittenRuns(q: DataSource, items: WrittenInsert[]): Promise<Array<{ current: boolean; inserted: boolean; result?: FlushResult }>> {
  const records: string[] = [];
  const updates: unknown[] = [];
  const nodes: unknown[] = [];
  const events: EventRow[] = [];
  const eventJson: string[] = [];
  items.forEach(({ values: v, flush: f }, i) => {
    if (f.runId !== v.runId || f.fence !== 1) throw new InvariantViolation('a run inserted with its first write is written under the claim of its insert');
    if (f.update.paused) throw new InvariantViolation('a run cannot be paused before it is inserted');
    const rows = flushRows(f);
    records.push(record(i, v));
    updates.push(rows.run);
    nodes.push(...rows.nodes);
    events.push(...rows.events);
    eventJson.push(rows.eventJson);
  });
  const allEvents = `[${eventJson.filter((j) => j !== '[]').map((j) => j.slice(1, -1)).join(',')}]`;
  const rows = await runPrepared<{ ord: number; current: boolean; inserted: boolean; written: Array<[string, string, string]> | null }>(q, INSERT_WRITTEN_BATCH, [
    `[${records.join(',')}]`,
    JSON.stringify(updates),
    JSON.stringify(nodes),
    ...eventInsertValues(events, allEvents),
  ]);
  if (rows.length !== items.length) throw new InvariantViolation('the batched insert answered another number of runs than it was sent');
  const written = writtenEvents(rows[0]?.written);
  return items.map(({ flush: f }, i) => {
    const row = rows[i];
    if (!row.current || !row.inserted) return { current: row.current, inserted: false };
    const result: FlushResult = { fenced: true, cancel: false, pause: null };
    if (f.events.length) result.events = () => writtenViews(eventJson[i], written);
    return { current: true, inserted: true, result };
  });
}
