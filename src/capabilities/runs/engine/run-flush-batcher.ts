import { isDatabaseUnavailable } from '../../../platform/database/database-driver';
import type { FlushParams, FlushResult } from './run-store';

interface Waiting {
  f: FlushParams;
  resolve(r: FlushResult): void;
  reject(e: unknown): void;
}

/**
 * Group commit of the engine's writes. A flush of an idle replica is sent at once; flushes that
 * arrive while `maxInFlight` statements are out wait and leave together, as one statement (many
 * runs finishing at once cost one round trip, one plan and one commit instead of one each). Every
 * run keeps its own fence inside the statement, so a batch writes exactly what its flushes would
 * have written one by one.
 *
 * A flush the `urgent` option names (a run of the newcomers' reserve, run-claimer.ts) does not wait:
 * it leaves at once in a statement of its own, beside those in flight, so a tenant's first run is
 * not written behind a saturated engine's batches (there are at most a few such runs at a time).
 *
 * A statement that fails for a reason of its own (a node already completed, anything but the
 * database being away) is retried flush by flush, so only the offending run sees the error; while
 * the database is away every flush of the batch gets the error and retries on its own.
 */
export class FlushBatcher {
  private waiting: Waiting[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    /** Sends one statement; `alone`: a flush sent by itself (urgent, or again after its batch failed), which claims nothing besides. */
    private readonly send: (fs: FlushParams[], alone: boolean) => Promise<FlushResult[]>,
    private readonly opts: { maxInFlight: number; maxBatch: number; urgent?: (f: FlushParams) => boolean } = { maxInFlight: 2, maxBatch: 64 },
  ) {}

  flush(f: FlushParams): Promise<FlushResult> {
    return new Promise<FlushResult>((resolve, reject) => {
      const w = { f, resolve, reject };
      if (this.opts.urgent?.(f)) return void this.write([w], true);
      this.waiting.push(w);
      this.schedule();
    });
  }

  /** Flushes queued in the same turn of the event loop leave together. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.opts.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.opts.maxInFlight && this.waiting.length) {
      // Everything that waits leaves in one statement (up to maxBatch): splitting it over the free
      // statements measured slower, each statement costing the database about as much as a dozen runs.
      const batch = this.take(this.waiting.length);
      this.inFlight++;
      void this.write(batch).finally(() => {
        this.inFlight--;
        if (this.waiting.length) this.schedule();
      });
    }
  }

  /** The next batch: at most `size` (and maxBatch) flushes, each of another run (a run's flushes are serialized anyway). */
  private take(size: number): Waiting[] {
    const batch: Waiting[] = [];
    const runs = new Set<string>();
    const rest: Waiting[] = [];
    for (const w of this.waiting) {
      if (batch.length < Math.min(size, this.opts.maxBatch) && !runs.has(w.f.runId)) {
        runs.add(w.f.runId);
        batch.push(w);
      } else rest.push(w);
    }
    this.waiting = rest;
    return batch;
  }

  private async write(batch: Waiting[], alone = false): Promise<void> {
    try {
      const results = await this.send(batch.map((w) => w.f), alone);
      batch.forEach((w, i) => w.resolve(results[i]));
    } catch (e) {
      if (batch.length === 1 || isDatabaseUnavailable(e)) {
        for (const w of batch) w.reject(e);
        return;
      }
      // Nothing of the statement was written: each flush on its own, so the error finds its run.
      await Promise.all(
        batch.map(async (w) => {
          try {
            w.resolve((await this.send([w.f], true))[0]);
          } catch (again) {
            w.reject(again);
          }
        }),
      );
    }
  }
}
