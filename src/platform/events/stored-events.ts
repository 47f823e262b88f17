import type { DataSource, EntityManager } from 'typeorm';
import type { StoredEvent } from './event.entities';
import { STREAM_KEY } from './event-log.service';
import { readForm } from './event-codes';

/**
 * Events of one stream of a tenant as stored, in sequence order: those after `afterSequence` and
 * before `beforeSequence` (when given), at most `limit`. The stream row is found by its primary key
 * (tenant, stream_id), its events by theirs (stream_key, sequence): for a fork's prefix, a run diff's
 * logs and a webhook delivery's event, which need the whole row (the followers read through
 * EventLogService.read).
 */
export async function storedEvents(
  db: DataSource | EntityManager,
  q: { tenant: string; streamId: string; afterSequence?: number | string; beforeSequence?: number | string; limit?: number },
): Promise<StoredEvent[]> {
  const rows = (await db.query(
    `SELECT e."id", $1::text AS "tenant", e."workspace", $2::text AS "stream_id", e."sequence"::text AS "sequence", e."code", e."type", e."payload", e."correlation_id", e."causation_id", e."node_id", e."created_at"
     FROM "event" e
     WHERE e."stream_key" = (${STREAM_KEY('$1', '$2')}) AND e."sequence" > $3::bigint AND ($4::bigint IS NULL OR e."sequence" < $4::bigint)
     ORDER BY e."sequence" ASC LIMIT $5::int`,
    [q.tenant, q.streamId, String(q.afterSequence ?? 0), q.beforeSequence === undefined ? null : String(q.beforeSequence), q.limit ?? null],
  )) as Array<{ id: string; tenant: string; workspace: string | null; stream_id: string; sequence: string; code: number; type: string | null; payload: Record<string, unknown>; correlation_id: string | null; causation_id: string | null; node_id: string | null; created_at: Date }>;
  return rows.map((r) => ({
    id: r.id,
    tenant: r.tenant,
    workspace: r.workspace,
    streamId: r.stream_id,
    sequence: r.sequence,
    ...readForm(r.code, r.type, r.payload, r.node_id),
    correlationId: r.correlation_id,
    causationId: r.causation_id,
    nodeId: r.node_id,
    createdAt: r.created_at,
  }));
}
