import type { DataSource, EntityManager } from 'typeorm';
import { HOST_STREAM } from './event-log.service';
import { scopeCondition } from '../tenancy/workspace-scope';

/** One `agent.toolCalled` event of a run, as the event log recorded it. */
export interface ToolCallEvent {
  /** '' for the tenant level. */
  workspace: string;
  runId: string;
  sequence: number;
  /** The event's `payload.toolId` as text (possibly empty: callers skip what they cannot use). */
  toolId: string;
  createdAt: Date;
}

type Db = DataSource | EntityManager;

/** The tenants with at least one tool call recorded in the last `lookbackHours`. */
export async function tenantsWithRecentToolCalls(db: Db, lookbackHours: number): Promise<string[]> {
  const rows = (await db.query(`SELECT DISTINCT "tenant" FROM "event" WHERE "type" = 'agent.toolCalled' AND "created_at" > now() - ($1::int * interval '1 hour')`, [lookbackHours])) as Array<{ tenant: string }>;
  return rows.map((r) => r.tenant);
}

/**
 * A tenant's recent tool calls in run streams (the host stream left out), in one workspace or in all,
 * ordered by workspace, run and sequence, at most `limit` of them.
 */
export async function recentToolCalls(db: Db, q: { tenant: string; workspace?: string; lookbackHours: number; limit: number }): Promise<ToolCallEvent[]> {
  const params: unknown[] = [q.lookbackHours, q.limit, HOST_STREAM];
  const rows = (await db.query(
    `SELECT coalesce(e."workspace", '') AS "workspace", s."stream_id", e."sequence", e."payload"->>'toolId' AS "tool_id", e."created_at"
     FROM "event" e JOIN "event_stream" s ON s."key" = e."stream_key"
     WHERE ${scopeCondition(q, params, { alias: 'e' })} AND e."type" = 'agent.toolCalled' AND s."stream_id" <> $3
       AND e."created_at" > now() - ($1::int * interval '1 hour') AND (e."payload"->>'toolId') IS NOT NULL
     ORDER BY "workspace", "stream_id", e."sequence" LIMIT $2`,
    params,
  )) as Array<{ workspace: string; stream_id: string; sequence: string; tool_id: string; created_at: Date }>;
  return rows.map((r) => ({ workspace: r.workspace, runId: r.stream_id, sequence: Number(r.sequence), toolId: r.tool_id, createdAt: r.created_at }));
}
