import type { TenantScope } from '../identity/principal';
import type { RunEventView } from './event-log.service';

/** How many streams are kept (the oldest goes first), and how long one stays once its writer closed it. */
export const LOCAL_TAIL_LIMITS = { streams: 1024, events: 1000, keepClosedMs: 30_000 };

interface Tail {
  tenant: string;
  workspace: string | null;
  /** What each committed write added, built only when a follower asks (most runs are never followed). */
  parts: Array<() => RunEventView[]>;
  count: number;
  views?: RunEventView[];
  /** Set when the writer closed the stream with a final status: nothing more is written to it. */
  status?: string;
  closedAt?: number;
}

/** A stream as this replica wrote it, whole: its status and its events after a sequence. */
export interface TailRead {
  status: string;
  events: RunEventView[];
}

/**
 * The streams this replica writes from their first event on (the runs its engine executes from
 * creation), as committed: a follower opening one is answered from here instead of reading the log.
 * Only while the stream is provably whole: it was empty when opened, every write to it since came
 * through here with consecutive sequences, and any other write to it (another service of this
 * replica) drops it. Another replica cannot write a stream while this one holds its run: it may only
 * ask (cancel, pause), and the writer here writes the answer. A stream it did write anyway (the lease
 * had lapsed) shows as a gap at the writer's next write, which drops the stream here too; the
 * followers' polls pick up what was missed.
 */
export class LocalTails {
  private readonly tails = new Map<string, Tail>();

  constructor(private readonly limits = LOCAL_TAIL_LIMITS) {}

  /** The writer starts a stream that has no event yet. */
  open(scope: { tenant: string; workspace: string | null }, streamId: string): void {
    this.tails.delete(streamId);
    this.tails.set(streamId, { tenant: scope.tenant, workspace: scope.workspace, parts: [], count: 0 });
    this.sweep();
  }

  /** A committed write of the stream's writer: `count` events, built by `events` when needed. */
  written(streamId: string, events: () => RunEventView[], count: number): void {
    const tail = this.tails.get(streamId);
    if (!tail) return;
    if (tail.closedAt !== undefined || tail.count + count > this.limits.events) {
      this.tails.delete(streamId);
      return;
    }
    tail.parts.push(events);
    tail.count += count;
    tail.views = undefined;
  }

  /** The writer is done: with its final status the stream stays answerable a while; without, it is dropped. */
  close(streamId: string, status?: string): void {
    const tail = this.tails.get(streamId);
    if (!tail) return;
    if (status === undefined) {
      if (tail.closedAt === undefined) this.tails.delete(streamId);
      return;
    }
    tail.status = status;
    tail.closedAt = Date.now();
  }

  /** Anything else wrote to the stream: it is no longer known whole here. */
  forget(streamId: string): void {
    this.tails.delete(streamId);
  }

  forgetTenant(tenant: string): void {
    for (const [id, t] of this.tails) if (t.tenant === tenant) this.tails.delete(id);
  }

  /**
   * The stream's events after `afterSequence` (at most `limit`) and its status (`openStatus` while
   * its writer still writes), when it is known whole here and the caller may see it; else undefined
   * (the caller reads the log, which also answers whether the caller may see it at all).
   */
  read(scope: TenantScope, streamId: string, afterSequence: number, limit: number, openStatus: string): TailRead | undefined {
    const tail = this.tails.get(streamId);
    if (!tail) return undefined;
    if (tail.closedAt !== undefined && Date.now() - tail.closedAt > this.limits.keepClosedMs) {
      this.tails.delete(streamId);
      return undefined;
    }
    if (tail.tenant !== scope.tenant || ((scope.workspace ?? null) !== null && scope.workspace !== tail.workspace)) return undefined;
    const views = this.views(streamId, tail);
    if (!views) return undefined;
    const events: RunEventView[] = [];
    for (const v of views) if (v.sequence > afterSequence && events.length < limit) events.push(v);
    return { status: tail.status ?? openStatus, events };
  }

  /** The stream's events in order, or undefined (and dropped) when they are not exactly 1, 2, 3, … */
  private views(streamId: string, tail: Tail): RunEventView[] | undefined {
    if (!tail.views) {
      const views = tail.parts.flatMap((part) => part());
      if (views.some((v, i) => v.sequence !== i + 1)) {
        this.tails.delete(streamId);
        return undefined;
      }
      tail.parts = [() => views];
      tail.views = views;
    }
    return tail.views;
  }

  /** Keeps at most `streams` (the oldest go first) and drops the closed ones kept long enough, from the oldest on. */
  private sweep(): void {
    const now = Date.now();
    for (const [id, t] of this.tails) {
      const expired = t.closedAt !== undefined && now - t.closedAt > this.limits.keepClosedMs;
      if (!expired && this.tails.size <= this.limits.streams) break;
      this.tails.delete(id);
    }
  }
}
