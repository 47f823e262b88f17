import { isDatabaseUnavailable } from '../../../platform/database/database-driver';
import type { FlushParams, FlushResult } from './run-store';

interface Waiting<I, O> {
  item: I;
  resolve(o: O): void;
  reject(e: unknown): void;
}

export interface GroupCommitOptions<I> {
  maxInFlight: number;
  maxBatch: number;
  /** An item that does not wait: it leaves at once in a statement of its own, beside those in flight. */
  urgent?: (item: I) => boolean;
  /** At most one item of a key per statement (the others wait for the next one). */
  key?: (item: I) => string;
  /** With nothing out and nothing waiting, an item leaves in the same turn of the event loop. */
  leaveWhenIdle?: boolean;
}

/**
 * Group commit: items that arrive while `maxInFlight` statements are out wait and leave together,
 * as one statement (one round trip, one plan and one commit for many instead of one each). `send`
 * gets the items of one statement; `alone` marks an item sent by itself (urgent, or again after its
 * batch failed). A statement that fails for a reason of its own (anything but the database being
 * away) is sent again item by item, so only the offending item sees the error; while the database is
 * away every item of the batch gets the error. The engine's writes (FlushBatcher) and the created
 * runs' inserts (run-insert-batcher.ts) both commit through it.
 */
export class GroupCommit<I, O> {
  private waiting: Array<Waiting<I, O>> = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly send: (items: I[], alone: boolean) => Promise<O[]>,
    private readonly opts: GroupCommitOptions<I> = { maxInFlight: 2, maxBatch: 64 },
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const w = { item, resolve, reject };
      if (this.opts.urgent?.(item)) return void this.write([w], true);
      if (this.opts.leaveWhenIdle && this.inFlight === 0 && !this.waiting.length) return this.start([w]);
      this.waiting.push(w);
      this.schedule();
    });
  }

  /** Items queued in the same turn of the event loop leave together. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.opts.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    // Everything that waits leaves in one statement (up to maxBatch): splitting it over the free
    // statements measured slower, each statement costing the database about as much as a dozen runs.
    while (this.inFlight < this.opts.maxInFlight && this.waiting.length) this.start(this.take());
  }

  private start(batch: Array<Waiting<I, O>>): void {
    this.inFlight++;
    void this.write(batch).finally(() => {
      this.inFlight--;
      if (this.waiting.length) this.schedule();
    });
  }

  /** The next batch: at most maxBatch items, one per key when items have keys. */
  private take(): Array<Waiting<I, O>> {
    const key = this.opts.key;
    if (!key) return this.waiting.splice(0, this.opts.maxBatch);
    const batch: Array<Waiting<I, O>> = [];
    const keys = new Set<string>();
    const rest: Array<Waiting<I, O>> = [];
    for (const w of this.waiting) {
      const k = key(w.item);
      if (batch.length < this.opts.maxBatch && !keys.has(k)) {
        keys.add(k);
        batch.push(w);
      } else rest.push(w);
    }
    this.waiting = rest;
    return batch;
  }

  private async write(batch: Array<Waiting<I, O>>, alone = false): Promise<void> {
    try {
      const results = await this.send(batch.map((w) => w.item), alone);
      batch.forEach((w, i) => w.resolve(results[i]));
    } catch (e) {
      if (batch.length === 1 || isDatabaseUnavailable(e)) {
        for (const w of batch) w.reject(e);
        return;
      }
      // Nothing of the statement was written: each item on its own, so the error finds its request.
      await Promise.all(
        batch.map(async (w) => {
          try {
            w.resolve((await this.send([w.item], true))[0]);
          } catch (again) {
            w.reject(again);
          }
        }),
      );
    }
  }
}

/**
 * Group commit of the engine's writes. A flush of an idle replica is sent at once (the next turn of
 * the event loop); flushes that arrive while statements are out leave together, at most one per run
 * (a run's flushes are serialized anyway). Every run keeps its own fence inside the statement, so a
 * batch writes exactly what its flushes would have written one by one.
 *
 * A flush the `urgent` option names (a run of the newcomers' reserve, run-claimer.ts) does not wait:
 * it leaves at once in a statement of its own, beside those in flight, so a tenant's first run is
 * not written behind a saturated engine's batches (there are at most a few such runs at a time).
 * `alone` tells `send` that a statement carries one flush sent by itself, which claims nothing besides.
 */
export class FlushBatcher extends GroupCommit<FlushParams, FlushResult> {
  constructor(
    send: (fs: FlushParams[], alone: boolean) => Promise<FlushResult[]>,
    opts: { maxInFlight: number; maxBatch: number; urgent?: (f: FlushParams) => boolean } = { maxInFlight: 2, maxBatch: 64 },
  ) {
    super(send, { ...opts, key: (f) => f.runId });
  }

  flush(f: FlushParams): Promise<FlushResult> {
    return this.submit(f);
  }
}
