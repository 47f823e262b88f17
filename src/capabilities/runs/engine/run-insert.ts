import type { DataSource, EntityManager } from 'typeorm';
import { preparedStatement, runPrepared } from '../../../platform/database/prepared-statement';
import { eventInsertCtes, eventInsertValues } from '../../../platform/events/event-log.service';
import { InvariantViolation } from '../../../platform/errors/internal-fault';
import { FlushParams, FlushResult, flushRows, writtenEvents, writtenViews } from './run-store';
import { CHAIN_CATALOG_VERSION_SQL } from '../workflow-resolver.service';
import { definitionRef } from '../run-definition.entity';
import { principalRef } from '../run-principal.entity';
import { noRunOf } from './run-claim-sql';
import { announcement } from './run-newcomer-claim';

/**
 * The statements that insert a run created by `POST /v1/runs` (or a host launch): the row only
 * (pending, claimed for this replica or announced to the others), or the row with its first write
 * (a run started before its insert: see EagerStart). Both are written only while the tenant's
 * catalog version is the one the run was planned at, and both leave a taken Idempotency-Key alone.
 */

/** The columns both inserts set from the request, $1..$18 in this order. */
export interface RunInsertValues {
  tenant: string;
  workspace: string | null;
  principal: string;
  /** Its `subject` is stored with the scopes in `run_principal`, the rest in the row. */
  metadata: Record<string, unknown>;
  workflowId: string;
  /** Stored in `run_definition` (once per tenant and content); the row keeps its key. */
  definitionText: string;
  inputs: Record<string, unknown>;
  configurable: Record<string, unknown>;
  scopes: string[];
  idempotencyKey: string | null;
  /** A keyed run's request hash (a retry with its key is compared with it); null without a key, for which nothing reads it. */
  requestHash: string | null;
  scopeId: string | null;
  dedupScope: string | null;
  traceParent: string | null;
  traceState: string | null;
  catalogVersion: string;
  runId: string;
  createResponse: string | null;
}

function requestValues(v: RunInsertValues): unknown[] {
  return [
    v.tenant,
    v.workspace,
    v.principal,
    JSON.stringify(v.metadata),
    v.workflowId,
    v.definitionText,
    JSON.stringify(v.inputs),
    JSON.stringify(v.configurable),
    v.scopes,
    v.idempotencyKey,
    v.requestHash,
    v.scopeId,
    v.dedupScope,
    v.traceParent,
    v.traceState,
    v.catalogVersion,
    v.runId,
    v.createResponse,
  ];
}

export const REQUEST_COLUMNS = `"id", "tenant", "workspace", "workspace_key", "principal", "kind", "metadata", "workflow_id", "definition_key", "inputs", "configurable", "principal_key", "idempotency_key", "request_hash", "scope_id", "dedup_scope", "trace_parent", "trace_state", "create_response"`;
// The definition, and the metadata's `subject` with the scopes, are stored by the same statement (the
// first run of each writes its row) and the run row keeps their keys.
const REQUEST_VALUES = `$17::uuid, $1::text, $2::text, coalesce($2::text, ''), $3::text, 'workflow', $4::jsonb - 'subject', $5::text, ${definitionRef('$1::text', '$6::jsonb')}, $7::jsonb, $8::jsonb, ${principalRef('$1::text', `$4::jsonb -> 'subject'`, '$9::text[]')}, $10::text, $11::text, $12::text, $13::text, $14::text, $15::text, $18::jsonb`;
const CURRENT = `v AS (SELECT ${CHAIN_CATALOG_VERSION_SQL('$1')} = $16::bigint AS "current")`;
/**
 * The same, and whether the run is its tenant's first (`first`): no run of the tenant executing or
 * queued (noRunOf). Only such a run may take a slot of the newcomers' reserve by its own insert
 * (docs/operations.md §Fair scheduling).
 */
const CURRENT_FIRST = `v AS (SELECT ${CHAIN_CATALOG_VERSION_SQL('$1')} = $16::bigint AS "current",
           ${noRunOf('$1::text')} AS "first")`;
/** A taken Idempotency-Key leaves the run unwritten (two requests with one key: one run). */
export const ON_KEY_TAKEN = `ON CONFLICT ("tenant", "workspace_key", "idempotency_key") WHERE "idempotency_key" IS NOT NULL DO NOTHING`;
const KEY_CONFLICT = `${ON_KEY_TAKEN} RETURNING "id"`;

/**
 * A run's insert: the row, pending (claimed for this replica when $19 names it: lease on the
 * database clock, fence 1). Without a claim the other replicas are told (`announced`, the
 * notification naming the run). `current` false: the chains moved, nothing was inserted; `id` null
 * with `current`: the Idempotency-Key is taken. `newcomer`: claimed only when the run is its
 * tenant's first (`claimed`), announced otherwise.
 */
export function insertRunSql(announce: boolean, newcomer = false): string {
  // The lease: $19's when it names one (as the tenant's first run only, for a newcomer).
  const lease = newcomer
    ? `CASE WHEN v."first" THEN $19::text END, CASE WHEN v."first" THEN now() + ($20::int * interval '1 millisecond') END, CASE WHEN v."first" THEN 1 ELSE 0 END`
    : `$19::text, CASE WHEN $19::text IS NULL THEN NULL ELSE now() + ($20::int * interval '1 millisecond') END, CASE WHEN $19::text IS NULL THEN 0 ELSE 1 END`;
  const notify = newcomer ? `, n AS (SELECT ${announcement('ins."id"', '$1')} FROM ins, v WHERE NOT v."first")` : announce ? `, n AS (SELECT ${announcement('ins."id"', '$1')} FROM ins)` : '';
  return `WITH ${newcomer ? CURRENT_FIRST : CURRENT},
         ins AS (
           INSERT INTO "run" (${REQUEST_COLUMNS}, "status", "lease_owner", "lease_expires_at", "fence")
           SELECT ${REQUEST_VALUES}, 'pending',
             ${lease}
           FROM v WHERE v."current"
           ${KEY_CONFLICT}
         )${notify}
         SELECT v."current", (SELECT "id" FROM ins) AS "id"${newcomer ? ', v."first" AS "claimed"' : ''}${notify ? ', (SELECT count(*) FROM n) AS "notified"' : ''} FROM v`;
}
const INSERT_CLAIMED = preparedStatement('run_insert_claimed', insertRunSql(false));
const INSERT_ANNOUNCED = preparedStatement('run_insert_announced', insertRunSql(true));
const INSERT_NEWCOMER = preparedStatement('run_insert_newcomer', insertRunSql(false, true));

/**
 * Inserts a pending run, claimed by `claim.owner` (lease `claim.leaseMs`) or, without a claim,
 * announced. `claim.newcomer`: claimed only when it is its tenant's first run, else announced
 * (`claimed` says which).
 */
export async function insertPendingRun(q: DataSource | EntityManager, v: RunInsertValues, claim: { owner: string; leaseMs: number; newcomer?: boolean } | null): Promise<{ current: boolean; id: string | null; claimed: boolean }> {
  const statement = claim?.newcomer ? INSERT_NEWCOMER : claim ? INSERT_CLAIMED : INSERT_ANNOUNCED;
  const [row] = await runPrepared<{ current: boolean; id: string | null; claimed?: boolean }>(q, statement, [...requestValues(v), claim?.owner ?? null, claim?.leaseMs ?? 0]);
  return { current: row.current, id: row.id, claimed: !!row.id && (claim?.newcomer ? !!row.claimed : !!claim) };
}

/**
 * A run's insert carrying its first write (the run was started before it was inserted, by the
 * replica that inserts it: fence 1): the row as that write leaves it (status, counters, lease or
 * none, outputs, error, times), its node rows and its events (the event log's insert), all or
 * nothing. $19 the run's update as the engine's flush sends it, $20 its node rows, $21..$24 the
 * event insert's. `current` and `id` as for the pending insert; `written` the events' [id,
 * sequence, ms] when the row was inserted. `newcomer`: inserted only when it is its tenant's first
 * run (`first`; nothing is inserted otherwise).
 */
export const INSERT_WRITTEN_SQL = insertWrittenSql();
export const INSERT_WRITTEN_NEWCOMER_SQL = insertWrittenSql(true);

function insertWrittenSql(newcomer = false): string {
  let n = 20;
  const eventCtes = eventInsertCtes(() => `$${++n}`, [], `"stream_id" IN (SELECT "id"::text FROM ins)`);
  return `WITH ${newcomer ? CURRENT_FIRST : CURRENT},
    u AS (
      SELECT * FROM jsonb_to_record($19::jsonb) AS u("owner" text, "fence" int, "node_executions" int, "cost_usd" float8, "lease_ms" int,
        "release" boolean, "status" text, "set_current" boolean, "current" text, "outputs" jsonb, "error" jsonb, "terminal" boolean)
    ),
    ins AS (
      INSERT INTO "run" (${REQUEST_COLUMNS}, "status", "lease_owner", "lease_expires_at", "fence", "node_executions", "cost_usd", "started_at", "current_node_id", "outputs", "error", "completed_at")
      SELECT ${REQUEST_VALUES}, coalesce(u."status", 'running'),
        CASE WHEN u."release" THEN NULL ELSE u."owner" END, CASE WHEN u."release" THEN NULL ELSE now() + (u."lease_ms" * interval '1 millisecond') END, u."fence",
        u."node_executions", u."cost_usd", now(), CASE WHEN u."set_current" THEN u."current" END, u."outputs", u."error", CASE WHEN u."terminal" THEN now() END
      FROM v, u WHERE v."current"${newcomer ? ` AND v."first"` : ''}
      ${KEY_CONFLICT}
    ),
    nodes AS (
      INSERT INTO "run_node" ("run_id", "node_id", "status", "attempt", "outputs", "error", "gate_id", "updated_at")
      SELECT n."run_id", n."node_id", n."status", n."attempt", n."outputs", n."error", n."gate_id", now()
      FROM jsonb_to_recordset($20::jsonb) AS n("run_id" uuid, "node_id" text, "status" "run_node_status", "attempt" int, "outputs" jsonb, "error" jsonb, "gate_id" uuid)
      WHERE n."run_id" IN (SELECT "id" FROM ins)
      RETURNING 1
    ),
    ${eventCtes.join(',\n    ')}
    SELECT v."current", (SELECT "id" FROM ins) AS "id", (SELECT count(*) FROM nodes) AS "nodes",${newcomer ? ' v."first",' : ''}
      (SELECT json_agg(json_build_array(w."id", w."sequence", floor(extract(epoch FROM w."created_at") * 1000)::bigint)) FROM written w) AS "written"
    FROM v`;
}
const INSERT_WRITTEN = preparedStatement('run_insert_written', INSERT_WRITTEN_SQL);
const INSERT_WRITTEN_NEWCOMER = preparedStatement('run_insert_written_newcomer', INSERT_WRITTEN_NEWCOMER_SQL);

/**
 * The insert of a run with its first write: `result` is what the write's fence saw (present when
 * inserted). `newcomer`: only as its tenant's first run; `first` false: it is not, nothing was inserted.
 */
export async function insertWrittenRun(q: DataSource, v: RunInsertValues, f: FlushParams, newcomer = false): Promise<{ current: boolean; inserted: boolean; first?: boolean; result?: FlushResult }> {
  if (f.runId !== v.runId || f.fence !== 1) throw new InvariantViolation('a run inserted with its first write is written under the claim of its insert');
  if (f.update.paused) throw new InvariantViolation('a run cannot be paused before it is inserted');
  const rows = flushRows(f);
  const [row] = await runPrepared<{ current: boolean; id: string | null; first?: boolean; written: Array<[string, string, string]> | null }>(q, newcomer ? INSERT_WRITTEN_NEWCOMER : INSERT_WRITTEN, [
    ...requestValues(v),
    JSON.stringify(rows.run),
    JSON.stringify(rows.nodes),
    ...eventInsertValues(rows.events, rows.eventJson),
  ]);
  if (newcomer && row.current && !row.first) return { current: true, inserted: false, first: false };
  if (!row.current || !row.id) return { current: row.current, inserted: false };
  const written = writtenEvents(row.written);
  const result: FlushResult = { fenced: true, cancel: false, pause: null };
  if (f.events.length) result.events = () => writtenViews(rows.eventJson, written);
  return { current: true, inserted: true, result };
}
