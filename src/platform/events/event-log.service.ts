import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, MoreThan } from 'typeorm';
import type { TenantScope } from '../identity/principal';
import { EventEntity } from './event.entities';

/** The stream id of a tenant's host-level events (goal, proposal, import...): they belong to no run. */
export const HOST_STREAM = 'host';

export interface AppendOptions {
  correlationId?: string;
  causationId?: string;
  nodeId?: string;
  /** Append inside the caller's transaction, so the event commits or rolls back with its cause. */
  manager?: EntityManager;
}

/** The wire shape of a run event (schemas/openwop/run-event.schema.json). */
export interface RunEventView {
  eventId: string;
  runId: string;
  type: string;
  payload: Record<string, unknown>;
  timestamp: string;
  sequence: number;
  causationId?: string;
  correlationId?: string;
  nodeId?: string;
}

export interface BatchEvent {
  type: string;
  payload: Record<string, unknown>;
  nodeId?: string;
  correlationId?: string;
  causationId?: string;
  /** Index of an earlier event of the same batch that caused this one. */
  causationIndex?: number;
}

export interface EventQuery {
  afterSequence?: number;
  type?: string;
  correlationId?: string;
  causationId?: string;
  nodeId?: string;
  limit?: number;
}

/**
 * The durable event log. Each stream (a run, or the tenant's host stream) has a gap-free,
 * monotonic `sequence`: the stream's counter row is incremented with an upsert whose row lock
 * serializes concurrent appends, and the event is written in the same transaction.
 */
@Injectable()
export class EventLogService {
  private readonly waiters = new Set<() => void>();

  constructor(private readonly ds: DataSource) {}

  async append(scope: TenantScope, streamId: string, type: string, payload: Record<string, unknown>, opts: AppendOptions = {}): Promise<RunEventView> {
    const write = async (m: EntityManager): Promise<RunEventView> => {
      const rows = (await m.query(
        `INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") VALUES ($1, $2, 1)
         ON CONFLICT ("tenant", "stream_id") DO UPDATE SET "last_sequence" = "event_stream"."last_sequence" + 1
         RETURNING "last_sequence"`,
        [scope.tenant, streamId],
      )) as Array<{ last_sequence: string }>;
      const sequence = rows[0].last_sequence;
      const entity = m.getRepository(EventEntity).create({
        id: randomUUID(),
        tenant: scope.tenant,
        workspace: scope.workspace ?? null,
        streamId,
        sequence,
        type,
        payload,
        correlationId: opts.correlationId ?? null,
        causationId: opts.causationId ?? null,
        nodeId: opts.nodeId ?? null,
      });
      await m.getRepository(EventEntity).insert(entity as never);
      return toView({ ...entity, createdAt: entity.createdAt ?? new Date() } as EventEntity);
    };
    const view = opts.manager ? await write(opts.manager) : await this.ds.transaction(write);
    this.notify();
    return view;
  }

  /**
   * Appends several events to one stream with two statements (one sequence reservation, one
   * multi-row insert), inside the caller's transaction when one is given. Used by the run engine,
   * which persists a node's events together with its completion.
   */
  async appendBatch(scope: TenantScope, streamId: string, items: BatchEvent[], manager?: EntityManager): Promise<RunEventView[]> {
    if (!items.length) return [];
    const write = async (m: EntityManager): Promise<RunEventView[]> => {
      const rows = (await m.query(
        `INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") VALUES ($1, $2, $3)
         ON CONFLICT ("tenant", "stream_id") DO UPDATE SET "last_sequence" = "event_stream"."last_sequence" + $3
         RETURNING "last_sequence"`,
        [scope.tenant, streamId, items.length],
      )) as Array<{ last_sequence: string }>;
      const first = Number(rows[0].last_sequence) - items.length + 1;
      const params: unknown[] = [];
      const tuples = items.map((e, i) => {
        const id = randomUUID();
        params.push(id, scope.tenant, scope.workspace ?? null, streamId, String(first + i), e.type, JSON.stringify(e.payload), e.correlationId ?? null, null, e.nodeId ?? null);
        const b = i * 10;
        return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}, $${b + 7}::jsonb, $${b + 8}, $${b + 9}, $${b + 10})`;
      });
      // Causation inside a batch points at an earlier event of the same batch.
      items.forEach((e, i) => {
        const cause = e.causationIndex !== undefined ? params[e.causationIndex * 10] : e.causationId;
        params[i * 10 + 8] = cause ?? null;
      });
      const inserted = (await m.query(
        `INSERT INTO "event" ("id", "tenant", "workspace", "stream_id", "sequence", "type", "payload", "correlation_id", "causation_id", "node_id")
         VALUES ${tuples.join(', ')} RETURNING "id", "sequence", "created_at"`,
        params,
      )) as Array<{ id: string; sequence: string; created_at: Date }>;
      const byId = new Map(inserted.map((r) => [r.id, r]));
      return items.map((e, i) => {
        const id = params[i * 10] as string;
        const row = byId.get(id);
        return toView({
          id,
          streamId,
          sequence: String(first + i),
          type: e.type,
          payload: e.payload,
          correlationId: e.correlationId ?? null,
          causationId: (params[i * 10 + 8] as string | null) ?? null,
          nodeId: e.nodeId ?? null,
          createdAt: row?.created_at ?? new Date(),
        } as EventEntity);
      });
    };
    const views = manager ? await write(manager) : await this.ds.transaction(write);
    this.notify();
    return views;
  }

  /** Wakes local long-pollers (after a commit that appended events through a caller's transaction). */
  wake(): void {
    this.notify();
  }

  /** Events of one stream of the caller's tenant (and workspace, when the caller has one). */
  async read(scope: TenantScope, streamId: string, q: EventQuery = {}): Promise<RunEventView[]> {
    const where: Record<string, unknown> = { tenant: scope.tenant, streamId };
    if (scope.workspace) where.workspace = scope.workspace;
    if (q.afterSequence) where.sequence = MoreThan(String(q.afterSequence));
    if (q.type) where.type = q.type;
    if (q.correlationId) where.correlationId = q.correlationId;
    if (q.causationId) where.causationId = q.causationId;
    if (q.nodeId) where.nodeId = q.nodeId;
    const rows = await this.ds.getRepository(EventEntity).find({
      where,
      order: { sequence: 'ASC' },
      take: Math.min(q.limit ?? 1000, 1000),
    });
    return rows.map(toView);
  }

  /** Long-poll: events after `afterSequence`, waiting up to `timeoutMs` for the first one. */
  async poll(scope: TenantScope, streamId: string, afterSequence: number, timeoutMs: number): Promise<RunEventView[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const events = await this.read(scope, streamId, { afterSequence });
      const left = deadline - Date.now();
      if (events.length || left <= 0) return events;
      // Woken early by a local append; another replica's append is seen at the next check.
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(left, 500));
        this.waiters.add(wake);
      });
    }
  }

  /** Removes every event and stream of a tenant (the test-seam reset). */
  async purgeTenant(tenant: string): Promise<void> {
    await this.ds.transaction(async (m) => {
      await m.query('DELETE FROM "event" WHERE "tenant" = $1', [tenant]);
      await m.query('DELETE FROM "event_stream" WHERE "tenant" = $1', [tenant]);
    });
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }
}

function toView(e: EventEntity): RunEventView {
  const v: RunEventView = {
    eventId: e.id,
    runId: e.streamId,
    type: e.type,
    payload: e.payload,
    timestamp: new Date(e.createdAt).toISOString(),
    sequence: Number(e.sequence),
  };
  if (e.causationId) v.causationId = e.causationId;
  if (e.correlationId) v.correlationId = e.correlationId;
  if (e.nodeId) v.nodeId = e.nodeId;
  return v;
}
