import { randomUUID } from 'node:crypto';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { DatabaseNotifications, EVENTS_CHANNEL } from '../database/database-notifications';
import { PreparedStatement, preparedStatement, runPrepared } from '../database/prepared-statement';
import { DataSource, EntityManager } from 'typeorm';
import type { TenantScope } from '../identity/principal';
import { MetricsService } from '../metrics/metrics.service';
import type { EventRecord } from './event.entities';
import { EVENT_TYPE_SQL, readForm, storedForm, TOOL_CALL_TENANT } from './event-codes';
export { readForm } from './event-codes';
import { jsonbOrder } from './jsonb-order';
import { LocalTails } from './local-tails';
import type { RunStreams } from './run-streams';

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A run opened for following (EventLogService.openRun): its status and first events, and the append counter when they were read. */
export interface OpenedRun {
  runId: string;
  status: string;
  events: RunEventView[];
  readAt: number;
}

/** A poller's offer: it takes the events when they follow on from what it has and its caller may see them. */
type Offer = (tenant: string, workspace: string | null, events: RunEventView[]) => void;

/** The stream id of a tenant's host-level events (goal, proposal, import...): they belong to no run. */
export const HOST_STREAM = 'host';

export interface AppendEntry {
  scope: TenantScope;
  streamId: string;
  type: string;
  payload: Record<string, unknown>;
  correlationId?: string;
  causationId?: string;
  nodeId?: string;
  /** Index of an earlier entry of the same batch that caused this one (its id becomes causationId). */
  causationIndex?: number;
  /** The event's id and time, fixed by the caller (a fork's copy of its source's history keeps the times). */
  eventId?: string;
  createdAt?: string;
}

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
 * serializes concurrent appends, and the events are written by the same statement, in the caller's
 * transaction (so the counter row stays locked only from that statement to the commit).
 */
@Injectable()
export class EventLogService implements OnModuleInit {
  private readonly waiters = new Set<() => void>();
  /** Pollers waiting on a stream, offered what this replica's engine writes to it (see publish). */
  private readonly offers = new Map<string, Set<Offer>>();
  /** Runs this process follows for a replica that executes them elsewhere: until when `followed_until` was set. */
  private readonly followed = new Map<string, number>();
  /** Whether a stream is a run this replica executes (its writes wake the followers here without a notification). */
  localStream: (streamId: string) => boolean = () => false;
  /** Counts notifications, so a poller can tell whether one came while it was reading. */
  private appends = 0;
  /** The streams this replica's engine writes from their first event: followers opening them are answered without a read. */
  private readonly tails = new LocalTails();
  /** The owner of the runs, asked about the streams that are runs (registerRunStreams), and its open-run read. */
  private runs?: { streams: RunStreams; open: PreparedStatement };

  constructor(
    private readonly ds: DataSource,
    private readonly metrics: MetricsService,
    private readonly notifications: DatabaseNotifications,
  ) {}

  /** The runs capability answers for the streams that are runs (the platform never names the run table). */
  registerRunStreams(streams: RunStreams): void {
    this.runs = { streams, open: openRunStatement(streams.openRunSource) };
  }

  onModuleInit(): void {
    // Another replica appended to a run followed here (or the listener is back: anything may have been missed).
    this.notifications.subscribe(EVENTS_CHANNEL, () => this.notify());
  }

  async append(scope: TenantScope, streamId: string, type: string, payload: Record<string, unknown>, opts: AppendOptions = {}): Promise<RunEventView> {
    const { manager, ...meta } = opts;
    const [view] = await this.appendMany([{ scope, streamId, type, payload, ...meta }], { manager });
    return view;
  }

  /**
   * Appends many events, to any number of streams, in one statement: each stream's counter is
   * bumped once by the number of its events (its row lock serializes concurrent appends, so every
   * stream stays gap-free and monotonic) and the events take the consecutive sequences in the order
   * given. Stream counters are locked in (tenant, stream) order, so two batches touching the same
   * streams queue instead of deadlocking; the lock is held only from this statement to commit.
   */
  async appendMany(entries: AppendEntry[], opts: { manager?: EntityManager } = {}): Promise<RunEventView[]> {
    if (!entries.length) return [];
    // Written past the engine: those streams are no longer known whole here.
    for (const e of entries) this.tails.forget(e.streamId);
    const rows = eventRows(entries);
    const params: unknown[] = [];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    const ctes = eventInsertCtes(p, rows);
    // Runs followed from another replica are notified (in the same statement; see RunStreams.followed).
    const runStreams = this.runs ? [...new Set(entries.map((e) => e.streamId))].filter((id) => UUID_TEXT.test(id)) : [];
    if (runStreams.length) ctes.push(`nt AS (SELECT pg_notify('${EVENTS_CHANNEL}', r."id") FROM (${this.runs!.streams.followed(`${p(runStreams)}::uuid[]`)}) r)`);
    const sql = `WITH ${ctes.join(',\n')}
         SELECT "id", "sequence", "created_at"${runStreams.length ? `, (SELECT count(*) FROM nt) AS "notified"` : ''} FROM written`;
    const write = async (m: EntityManager): Promise<Array<{ id: string; sequence: string; created_at: Date }>> =>
      (await m.query(sql, params)) as Array<{ id: string; sequence: string; created_at: Date }>;
    // One statement is atomic on its own: without a caller's transaction it needs no BEGIN/COMMIT.
    const written = await this.metrics.timeEventAppend(() => write(opts.manager ?? this.ds.manager));
    this.metrics.eventsAppended(entries);
    const byId = new Map(written.map((w) => [w.id, w]));
    const views = rows.map((r) => {
      const w = byId.get(r.id)!;
      return toView({
        id: r.id,
        streamId: r.stream_id,
        ...readForm(r.code, r.type, r.payload, r.node_id),
        createdAt: w.created_at,
        sequence: w.sequence,
        correlationId: r.correlation_id,
        causationId: r.causation_id,
        nodeId: r.node_id,
      } as EventRecord);
    });
    this.notify();
    return views;
  }

  /**
   * The run engine of this replica starts writing a stream that has no event yet (a run it created):
   * until it closes it, it is the stream's only writer, and followers opening it are answered from
   * what it published (see LocalTails).
   */
  openLocalStream(scope: { tenant: string; workspace: string | null }, streamId: string): void {
    this.tails.open(scope, streamId);
  }

  /** The engine stops writing the stream: `status` is the run's final one (kept a while), none drops it. */
  closeLocalStream(streamId: string, status?: string): void {
    this.tails.close(streamId, status);
  }

  /** Wakes local long-pollers (after a commit that appended events through a caller's transaction). */
  wake(): void {
    this.notify();
  }

  /**
   * Appends several events to one stream in one statement, inside the caller's transaction when one
   * is given (the run engine persists a node's events together with its completion).
   */
  async appendBatch(scope: TenantScope, streamId: string, items: BatchEvent[], manager?: EntityManager): Promise<RunEventView[]> {
    return this.appendMany(items.map((e) => ({ scope, streamId, ...e })), { manager });
  }

  /** Events of one stream of the caller's tenant (its stream row's key: the events hold no tenant) and workspace, when the caller has one. */
  async read(scope: TenantScope, streamId: string, q: EventQuery = {}): Promise<RunEventView[]> {
    // Plain SQL over the event key (the stream row's key found first, by (tenant, stream_id)): every
    // stream follower (SSE, long poll, gRPC) reads here, so no entity is built per event. Ordered by
    // the bigint column (e."sequence"). A follower's read (no filter but the sequence) is prepared.
    const limit = Math.min(q.limit ?? 1000, 1000);
    if (!q.type && !q.correlationId && !q.causationId && !q.nodeId) {
      const rows = await runPrepared<EventRowRead>(this.ds, READ_STREAM, [scope.tenant, streamId, scope.workspace ?? null, String(q.afterSequence ?? 0), limit]);
      return rows.map(viewOfRow);
    }
    const params: unknown[] = [streamId, scope.tenant];
    const where = [`e."stream_key" = (${STREAM_KEY('$2', '$1')})`];
    if (scope.workspace) where.push(`e."workspace" = $${params.push(scope.workspace)}`);
    const add = (column: string, v: unknown, cast = '') => {
      params.push(v);
      where.push(`"${column}" ${column === 'sequence' ? '>' : '='} $${params.length}${cast}`);
    };
    if (q.afterSequence) add('sequence', String(q.afterSequence), '::bigint');
    if (q.type) where.push(`${EVENT_TYPE_SQL('e')} = $${params.push(q.type)}`);
    if (q.correlationId) add('correlation_id', q.correlationId);
    if (q.causationId) add('causation_id', q.causationId);
    if (q.nodeId) add('node_id', q.nodeId);
    params.push(limit);
    const rows = (await this.ds.query(`SELECT ${EVENT_COLUMNS('$1::text')} FROM "event" e WHERE ${where.join(' AND ')} ORDER BY e."sequence" ASC LIMIT $${params.length}`, params)) as EventRowRead[];
    return rows.map(viewOfRow);
  }

  /**
   * Opens a follower of a run: the run's id as stored, its status and its first events after
   * `afterSequence`, in one statement (none for a run this replica's engine writes from its first
   * event: see openLocalStream); undefined when the caller may not see the run (another tenant or
   * workspace, or none).
   */
  async openRun(scope: TenantScope, runId: string, afterSequence: number): Promise<OpenedRun | undefined> {
    if (!UUID_TEXT.test(runId)) return undefined;
    const readAt = this.appends;
    // A run this replica's engine writes from its first event on: as written, no read (the status
    // stays `running` until the engine closes the stream with the final one).
    const id = runId.toLowerCase();
    const known = this.tails.read(scope, id, afterSequence, 1000, 'running');
    if (known) return { runId: id, status: known.status, events: known.events, readAt };
    if (!this.runs) return undefined;
    const rows = await runPrepared<EventRowRead & { run_id: string; run_status: string }>(this.ds, this.runs.open, [runId, scope.tenant, scope.workspace ?? null, String(afterSequence), 1000]);
    if (!rows.length) return undefined;
    return { runId: rows[0].run_id, status: rows[0].run_status, events: rows.filter((r) => r.id !== null).map(viewOfRow), readAt };
  }

  /**
   * Long-poll: events after `afterSequence`, waiting up to `timeoutMs` for the first one. `readAt`:
   * the caller's own read of the stream up to `afterSequence` (OpenedRun.readAt): when this
   * replica's engine writes the stream and has written nothing since, that read stands for the
   * first one here (what comes next is handed over or wakes the poller).
   */
  async poll(scope: TenantScope, streamId: string, afterSequence: number, timeoutMs: number, readAt?: number): Promise<RunEventView[]> {
    const deadline = Date.now() + timeoutMs;
    // The caller's read stands for the first one; an append since it moved the counter, and is read below.
    let skipRead = readAt !== undefined && timeoutMs > 0 && this.localStream(streamId);
    for (;;) {
      // Noted before the read: an append that commits while the read runs may be missed by it, and
      // its wake would find no waiter yet; seeing the counter move, the poller reads again at once.
      const seen = skipRead ? (readAt as number) : this.appends;
      const events = skipRead ? [] : await this.read(scope, streamId, { afterSequence });
      skipRead = false;
      const left = deadline - Date.now();
      if (events.length || left <= 0) return events;
      if (this.appends !== seen) continue;
      // A run another replica executes: ask its writes to notify this one; read once more after
      // asking (a write committed just before it did not notify).
      if (await this.follow(scope, streamId)) continue;
      // Woken early by a local append or a notification; else another replica's append is seen at the
      // next check. The run engine of this replica hands over what it wrote (publish): no read then.
      const handed = await new Promise<RunEventView[] | undefined>((resolve) => {
        const offers = this.offers.get(streamId) ?? new Set<Offer>();
        const done = (events?: RunEventView[]) => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          offers.delete(offer);
          if (!offers.size && this.offers.get(streamId) === offers) this.offers.delete(streamId);
          resolve(events);
        };
        const wake = () => done();
        // Taken only when it follows on from what this poller has (the log has no gap), and only if the caller may see it.
        const offer: Offer = (tenant, workspace, views) => {
          if (tenant !== scope.tenant || (scope.workspace !== undefined && scope.workspace !== workspace)) return;
          const next = views.filter((v) => v.sequence > afterSequence);
          if (next.length && next[0].sequence === afterSequence + 1) done(next.slice(0, 1000));
        };
        this.offers.set(streamId, offers.add(offer));
        const timer = setTimeout(wake, Math.min(left, 500));
        this.waiters.add(wake);
      });
      if (handed) return handed;
    }
  }

  /**
   * What the run engine of this replica wrote to a stream (`count` events), once committed: kept for
   * the followers that open the stream later when it is a local stream (openLocalStream), handed to
   * the pollers waiting on it (built only if there are any), then every waiter is woken as by any append.
   */
  publish(scope: { tenant: string; workspace: string | null }, streamId: string, events: () => RunEventView[], count: number): void {
    this.tails.written(streamId, events, count);
    this.metrics.eventsAppended(() => events().map((e) => ({ scope, streamId, type: e.type, payload: e.payload })));
    const offers = this.offers.get(streamId);
    if (offers?.size) {
      const views = events();
      for (const offer of [...offers]) offer(scope.tenant, scope.workspace, views);
    }
    this.notify();
  }

  /**
   * Marks a run followed from here (`run.followed_until`, a minute ahead, renewed after half of it)
   * when notifications arrive and this replica does not execute it. True when it wrote the mark.
   */
  private async follow(scope: TenantScope, streamId: string): Promise<boolean> {
    if (!this.runs || !this.notifications.live || !UUID_TEXT.test(streamId) || this.localStream(streamId)) return false;
    const now = Date.now();
    if ((this.followed.get(streamId) ?? 0) > now + 30_000) return false;
    this.followed.set(streamId, now + 60_000);
    if (this.followed.size > 10_000) for (const [k, until] of this.followed) if (until < now) this.followed.delete(k);
    await this.runs.streams.markFollowed(scope, streamId);
    return true;
  }

  /** The highest sequence of a stream of the caller's tenant (0 when it has no events). */
  async lastSequence(scope: TenantScope, streamId: string): Promise<number> {
    const rows = (await this.ds.query(`SELECT "last_sequence" FROM "event_stream" WHERE "tenant" = $1 AND "stream_id" = $2`, [scope.tenant, streamId])) as Array<{ last_sequence: string }>;
    return rows.length ? Number(rows[0].last_sequence) : 0;
  }

  /** Removes every event and stream of a tenant (the test-seam reset). */
  async purgeTenant(tenant: string): Promise<void> {
    this.tails.forgetTenant(tenant);
    await this.ds.transaction(async (m) => {
      await m.query('DELETE FROM "event" WHERE "stream_key" IN (SELECT "key" FROM "event_stream" WHERE "tenant" = $1)', [tenant]);
      await m.query('DELETE FROM "event_stream" WHERE "tenant" = $1', [tenant]);
    });
  }

  private notify(): void {
    this.appends++;
    for (const w of [...this.waiters]) w();
  }
}

/** An event as the insert writes it: `ord`, its 1-based place in its stream's part of the batch; code, type, payload as stored (event-codes.ts). */
export interface EventRow {
  id: string;
  tenant: string;
  workspace: string | null;
  stream_id: string;
  ord: number;
  code: number; type: string | null;
  payload: Record<string, unknown>;
  correlation_id: string | null;
  causation_id: string | null;
  node_id: string | null;
  /** Absent: the time of the insert. */
  created_at?: string;
}

/** The rows of a batch (ids fixed by the caller when given, else new); causation inside a batch points at an earlier event of it. */
export function eventRows(entries: AppendEntry[], ids?: string[]): EventRow[] {
  const counts = new Map<string, number>();
  const rows = entries.map((e, i) => {
    const k = JSON.stringify([e.scope.tenant, e.streamId]);
    const ord = (counts.get(k) ?? 0) + 1;
    counts.set(k, ord);
    return {
      id: e.eventId ?? ids?.[i] ?? randomUUID(),
      tenant: e.scope.tenant,
      workspace: e.scope.workspace ?? null,
      stream_id: e.streamId,
      ord,
      ...storedForm(e.type, e.payload, e.nodeId),
      correlation_id: e.correlationId ?? null,
      causation_id: (e.causationId ?? null) as string | null,
      node_id: e.nodeId ?? null,
      ...(e.createdAt ? { created_at: e.createdAt } : {}),
    };
  });
  entries.forEach((e, i) => {
    if (e.causationIndex !== undefined && e.causationIndex < i) rows[i].causation_id = rows[e.causationIndex].id;
  });
  return rows;
}

/**
 * The one event insert, as common table expressions of a statement (`counts`, `bumped`, `written`
 * RETURNING "id", "sequence", "created_at"): each stream's counter is bumped once by the number of
 * its events (its row lock serializes concurrent appends; counters are locked in (tenant, stream)
 * order, so two batches touching the same streams queue instead of deadlocking) and the events take
 * the consecutive sequences in the order given. With `when`, nothing is written unless it holds (the
 * run engine's fence, written by the same statement). `param` binds a value and answers its placeholder.
 * The rows are read with json_to_recordset: a payload is stored as the text JSON.stringify wrote.
 */
export function eventInsertCtes(param: (v: unknown) => string, rows: EventRow[], when?: string): string[] {
  const [tenants, streams, counts, json] = eventInsertValues(rows);
  return [
    `counts AS (
           SELECT c."tenant", c."stream_id", c."n", c."o" FROM unnest(${param(tenants)}::text[], ${param(streams)}::text[], ${param(counts)}::bigint[]) WITH ORDINALITY AS c("tenant", "stream_id", "n", "o")
         )`,
    `bumped AS (
           INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence")
           SELECT "tenant", "stream_id", "n" FROM counts${when ? ` WHERE ${when}` : ''} ORDER BY "o"
           ON CONFLICT ("tenant", "stream_id") DO UPDATE SET "last_sequence" = "event_stream"."last_sequence" + EXCLUDED."last_sequence"
           RETURNING "tenant", "stream_id", "last_sequence", "key"
         )`,
    `written AS (
         INSERT INTO "event" ("stream_key", "sequence", "created_at", "id", "code", "tenant", "workspace", "type", "payload", "correlation_id", "causation_id", "node_id")
         SELECT b."key", b."last_sequence" - c."n" + e."ord", COALESCE(e."created_at", now()), e."id", e."code", ${TOOL_CALL_TENANT('e')}, e."workspace", e."type", e."payload", e."correlation_id", e."causation_id", e."node_id"
         FROM json_to_recordset(${param(json)}::json) AS e("id" uuid, "tenant" text, "workspace" text, "stream_id" text, "ord" bigint, "code" smallint, "type" text, "payload" json, "correlation_id" text, "causation_id" text, "node_id" text, "created_at" timestamptz)
         JOIN bumped b ON b."tenant" = e."tenant" AND b."stream_id" = e."stream_id"
         JOIN counts c ON c."tenant" = e."tenant" AND c."stream_id" = e."stream_id"
         RETURNING "id", "sequence", "created_at"
         )`,
  ];
}

/**
 * The values of eventInsertCtes' four parameters, in its order: each stream's tenant, id and event
 * count (streams in (tenant, stream) order: two batches lock shared counters in the same order),
 * then the rows as JSON. Nothing of the statement's text depends on them.
 */
export function eventInsertValues(rows: EventRow[], json = JSON.stringify(rows)): [string[], string[], number[], string] {
  const streams = new Map<string, { tenant: string; streamId: string; n: number }>();
  for (const r of rows) {
    const k = JSON.stringify([r.tenant, r.stream_id]);
    const s = streams.get(k) ?? { tenant: r.tenant, streamId: r.stream_id, n: 0 };
    s.n += 1;
    streams.set(k, s);
  }
  const counts = [...streams.values()].sort((a, b) => (a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1 : a.streamId < b.streamId ? -1 : a.streamId > b.streamId ? 1 : 0));
  return [counts.map((c) => c.tenant), counts.map((c) => c.streamId), counts.map((c) => c.n), json];
}

/** An event row as the follower reads return it. */
interface EventRowRead {
  id: string;
  stream_id: string;
  sequence: string;
  code: number; type: string | null;
  payload: Record<string, unknown>;
  correlation_id: string | null;
  causation_id: string | null;
  node_id: string | null;
  created_at: Date;
}

/** An event's columns as read (`e`), with `stream` (an expression: the stream's id as text). */
const EVENT_COLUMNS = (stream: string) => `e."id", ${stream} AS "stream_id", e."sequence"::text AS "sequence", e."code", e."type", e."payload", e."correlation_id", e."causation_id", e."node_id", e."created_at"`;
/** The key of the stream `stream` of `tenant` (SQL expressions): a subquery, so the event scan stays on the key's order. */
export const STREAM_KEY = (tenant: string, stream: string) => `SELECT s."key" FROM "event_stream" s WHERE s."tenant" = ${tenant} AND s."stream_id" = ${stream}`;

/** A follower's read: $1 tenant, $2 stream, $3 the caller's workspace (null: any), $4 after this sequence, $5 at most. */
const READ_STREAM = preparedStatement(
  'event_read_stream',
  `SELECT ${EVENT_COLUMNS('$2::text')} FROM "event" e
   WHERE e."stream_key" = (${STREAM_KEY('$1', '$2')}) AND ($3::text IS NULL OR e."workspace" = $3::text) AND e."sequence" > $4::bigint
   ORDER BY e."sequence" ASC LIMIT $5::int`,
);

/**
 * The run ($1) of the caller ($2 tenant, $3 workspace or null) with its events after $4, at most $5: one
 * row per event, or one with no event. The run comes from its owner's `source` (RunStreams.openRunSource).
 */
function openRunStatement(source: string): PreparedStatement {
  return preparedStatement(
    'event_open_run',
    `SELECT r."id"::text AS "run_id", r."status" AS "run_status", ${EVENT_COLUMNS('r."id"::text')} FROM (${source}) r
   LEFT JOIN LATERAL (
     SELECT * FROM "event" x WHERE x."stream_key" = (${STREAM_KEY('r."tenant"', 'r."id"::text')}) AND ($3::text IS NULL OR x."workspace" = $3::text) AND x."sequence" > $4::bigint
     ORDER BY x."sequence" ASC LIMIT $5::int
   ) e ON true
   ORDER BY e."sequence" ASC`,
  );
}

function viewOfRow(r: EventRowRead): RunEventView {
  return toView({ id: r.id, streamId: r.stream_id, sequence: r.sequence, ...readForm(r.code, r.type, r.payload, r.node_id), correlationId: r.correlation_id, causationId: r.causation_id, nodeId: r.node_id, createdAt: r.created_at });
}

/** An event as served (read back or just written), its payload's keys in jsonb's order as before (jsonb-order.ts). */
export function toView(e: EventRecord): RunEventView {
  const v: RunEventView = {
    eventId: e.id,
    runId: e.streamId,
    type: e.type,
    payload: jsonbOrder(e.payload),
    timestamp: new Date(e.createdAt).toISOString(),
    sequence: Number(e.sequence),
  };
  if (e.causationId) v.causationId = e.causationId;
  if (e.correlationId) v.correlationId = e.correlationId;
  if (e.nodeId) v.nodeId = e.nodeId;
  return v;
}
