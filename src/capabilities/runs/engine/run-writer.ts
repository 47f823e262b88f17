import { randomUUID } from 'node:crypto';
import { isDatabaseUnavailable } from '../../../platform/database/database-driver';
import type { NodeExecutionContext } from '@openwop-host/plugin-sdk';
import type { BatchEvent } from '../../../platform/events/event-log.service';
import type { FlushParams, FlushResult, NodeWrite, RunUpdate } from './run-store';

/** The claim no longer holds the run's lease: this execution writes nothing more. */
export class LeaseLost extends Error {}

/**
 * The message of a run whose lease expired: after renewals that failed (the database away), or
 * because this process stalled so long that no renewal could be sent (a blocked event loop is not
 * a database outage, and an operator looks for its cause elsewhere).
 */
export function leaseExpiredMessage(stalledMs: number | undefined): string {
  if (stalledMs !== undefined) return 'run lease expired because this process stalled (its event loop was blocked) and could not renew it; the run resumes from what was written';
  return 'run lease could not be renewed while the database was away; the run resumes when it answers';
}

/** The engine's own write of a run failed (not a node): the run is retried or failed as a whole. */
export class EngineWriteError extends Error {
  constructor(
    readonly cause: unknown,
    /** The database was unavailable for the whole retry window. */
    readonly unavailable: boolean,
  ) {
    super(`the run engine could not write the run: ${(cause as Error)?.message ?? String(cause)}`);
    this.name = 'EngineWriteError';
  }
}

/** The store statements a writer uses (run-store.ts, or a fake in unit tests). */
export interface WriterStore {
  flush(f: FlushParams): Promise<FlushResult>;
  eventExists(p: { tenant: string; runId: string; eventId: string }): Promise<boolean>;
}

/** What a writer asks of the execution it writes for. */
export interface WriterHooks {
  /** The claim and its counters as they are now (written with the run row). */
  claim(): Omit<FlushParams, 'update' | 'writes' | 'events' | 'eventIds'>;
  /** The execution is shutting down: no retry outlives it. */
  shuttingDown(): boolean;
  /** A write committed; `seen` is what the fence saw (absent for an attempt recognised after a lost answer). */
  committed(u: RunUpdate, batch: BatchEvent[], writes: NodeWrite[], seen?: FlushResult): void;
  leaseLost(): void;
  warn(msg: string, err: string): void;
}

/**
 * The pending node rows and events of one claim and their writes: each flush is one fenced
 * statement of the store (flushRun), serialized per run, retried while the database is away.
 */
export class RunWriter {
  private batch: BatchEvent[] = [];
  private writes: NodeWrite[] = [];
  private batchSince = 0;
  private flushing: Promise<void> = Promise.resolve();
  /** The events queued by append: their ids, fixed when queued, and the failure of the write that carried them. */
  private readonly appended = new WeakMap<BatchEvent, { id: string; error?: unknown }>();

  constructor(
    private readonly store: WriterStore,
    private readonly leaseMs: number,
    private readonly hooks: WriterHooks,
  ) {}

  queue(e: BatchEvent): void {
    if (!this.batch.length) this.batchSince = Date.now();
    this.batch.push(e);
  }

  write(w: NodeWrite): void {
    this.writes.push(w);
  }

  /**
   * Writes one event now, fenced with everything pending before it (a node's `ctx.emit`): its id,
   * once committed. A claim that lost the lease writes nothing: LeaseLost (an EngineWriteError when
   * the write itself failed), whichever flush carried the event.
   */
  async append(e: BatchEvent): Promise<string> {
    const outcome: { id: string; error?: unknown } = { id: randomUUID() };
    this.appended.set(e, outcome);
    this.queue(e);
    await this.flush();
    if (outcome.error) throw outcome.error;
    return outcome.id;
  }

  /** How many events wait for the next flush. */
  get pendingEvents(): number {
    return this.batch.length;
  }

  /** When the oldest pending event was queued. */
  get pendingSince(): number {
    return this.batchSince;
  }

  /** Whether a pending node write matches. */
  pendingWrite(match: (w: NodeWrite) => boolean): boolean {
    return this.writes.some(match);
  }

  /** Drops what is pending (an engine fault rewrites the run's end from scratch). */
  discard(): void {
    this.batch = [];
    this.writes = [];
  }

  /** Writes the pending node rows and events, fenced, in one statement (serialized per run). */
  flush(update: RunUpdate = {}): Promise<void> {
    const next = this.flushing.then(() => this.flushNow(update));
    this.flushing = next.catch(() => undefined);
    return next;
  }

  private async flushNow(update: RunUpdate): Promise<void> {
    if (!this.batch.length && !this.writes.length && !update.status && !update.current) return;
    const batch = this.batch;
    const writes = this.writes;
    this.batch = [];
    this.writes = [];
    try {
      await this.writeRetrying(update, writes, batch);
    } catch (e) {
      for (const ev of batch) {
        const outcome = this.appended.get(ev);
        if (outcome) outcome.error = e;
      }
      if (e instanceof LeaseLost) this.hooks.leaseLost();
      throw e;
    }
  }

  /**
   * writeOnce, retried with backoff (100 ms doubling to 2 s) while the database is unavailable, for
   * at most one lease: past it another replica may have claimed the run, and the fence decides. The
   * event ids are fixed before the first attempt, so an attempt whose answer was lost but which
   * committed is recognised by its first event instead of being written twice. Any other failure,
   * or the database still away at the end, is an EngineWriteError.
   */
  private async writeRetrying(u: RunUpdate, writes: NodeWrite[], batch: BatchEvent[]): Promise<void> {
    const ids = batch.map((e) => this.appended.get(e)?.id ?? randomUUID());
    const until = Date.now() + this.leaseMs;
    let delay = 100;
    let warned = false;
    for (;;) {
      try {
        return await this.writeOnce(u, writes, batch, ids);
      } catch (e) {
        if (e instanceof LeaseLost) throw e;
        if (!isDatabaseUnavailable(e)) throw new EngineWriteError(e, false);
        if (Date.now() + delay > until || this.hooks.shuttingDown()) throw new EngineWriteError(e, true);
        if (!warned) {
          warned = true;
          this.hooks.warn('run engine write failed: the database is unavailable; retrying', (e as Error).message);
        }
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 2000);
        try {
          const { tenant, runId } = this.hooks.claim();
          if (ids.length && (await this.store.eventExists({ tenant, runId, eventId: ids[0] }))) return this.hooks.committed(u, batch, writes);
        } catch {
          /* still away: the next attempt tells */
        }
      }
    }
  }

  /** One round trip: the store's fenced flush. */
  private async writeOnce(u: RunUpdate, writes: NodeWrite[], batch: BatchEvent[], ids: string[]): Promise<void> {
    const seen = await this.store.flush({ ...this.hooks.claim(), update: u, writes, events: batch, eventIds: ids });
    if (!seen.fenced) throw new LeaseLost('the run lease was lost');
    this.hooks.committed(u, batch, writes, seen);
  }
}

/**
 * A node's `ctx.emit`: the event is written by the execution's writer, after what it has pending
 * (the event follows what caused it in the log) and in the same fenced statement, so a claim whose
 * lease was taken over appends nothing (LeaseLost); an RFC 0026 `provider.usage` in USD is the
 * protocol's durable cost record (RFC 0084), counted at once. A write that fails is the engine's, not the node's.
 */
export function nodeEmitter(writer: Pick<RunWriter, 'append'>, nodeId: string, hooks: { addCost(usd: number): void }): NodeExecutionContext['emit'] {
  return async (type, payload, opts) => {
    const e: BatchEvent = { type, payload, nodeId };
    if (opts?.correlationId) e.correlationId = opts.correlationId;
    if (opts?.causationId) e.causationId = opts.causationId;
    const eventId = await writer.append(e);
    if (type === 'provider.usage' && typeof payload.costEstimateUsd === 'number' && (payload.currency === undefined || payload.currency === 'USD')) hooks.addCost(payload.costEstimateUsd);
    return { eventId };
  };
}
