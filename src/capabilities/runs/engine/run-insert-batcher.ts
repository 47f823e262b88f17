import type { DataSource } from 'typeorm';
import { isDatabaseUnavailable } from '../../../platform/database/database-driver';
import type { FlushParams } from './run-store';
import type { EagerInsertOutcome } from './run-eager-start';
import { insertPendingRun, insertWrittenRun, RunInsertValues } from './run-insert';
import { insertPendingRuns, insertWrittenRuns } from './run-insert-batch';

interface Waiting<I, O> {
  item: I;
  resolve(o: O): void;
  reject(e: unknown): void;
}

/**
 * Group commit of created runs' inserts (as FlushBatcher is of the engine's writes). An insert of an
 * idle replica leaves at once (in the same turn of the event loop), in the statement it would have
 * had alone; inserts that arrive while
 * `maxInFlight` statements are out wait and leave together, as one statement (one round trip and
 * one commit for many runs). A batch that fails for a reason of its own (a row the database refuses)
 * is sent again run by run, so only the offending run sees the error; while the database is away
 * every run of the batch gets the error.
 */
export class InsertBatcher<I, O> {
  private waiting: Array<Waiting<I, O>> = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly sendMany: (items: I[]) => Promise<O[]>,
    private readonly sendOne: (item: I) => Promise<O>,
    private readonly opts: { maxInFlight: number; maxBatch: number } = { maxInFlight: 2, maxBatch: 64 },
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const w = { item, resolve, reject };
      // Nothing out and nothing waiting: this one leaves now, not a turn of the event loop later.
      if (this.inFlight === 0 && !this.waiting.length) {
        this.send([w]);
        return;
      }
      this.waiting.push(w);
      this.schedule();
    });
  }

  /** Inserts asked for in the same turn of the event loop leave together. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.opts.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.opts.maxInFlight && this.waiting.length) this.send(this.waiting.splice(0, this.opts.maxBatch));
  }

  private send(batch: Array<Waiting<I, O>>): void {
    this.inFlight++;
    void this.write(batch).finally(() => {
      this.inFlight--;
      if (this.waiting.length) this.schedule();
    });
  }

  private async write(batch: Array<Waiting<I, O>>): Promise<void> {
    if (batch.length === 1) {
      const [w] = batch;
      await this.sendOne(w.item).then(w.resolve, w.reject);
      return;
    }
    try {
      const out = await this.sendMany(batch.map((w) => w.item));
      batch.forEach((w, i) => w.resolve(out[i]));
    } catch (e) {
      if (isDatabaseUnavailable(e)) {
        for (const w of batch) w.reject(e);
        return;
      }
      // Nothing of the statement was written: each run on its own, so the error finds its request.
      await Promise.all(batch.map((w) => this.sendOne(w.item).then(w.resolve, w.reject)));
    }
  }
}

/**
 * The batched inserts of the runs this replica creates outside a caller's transaction: pending
 * (claimed under `claim`, else announced) and with their first write (fence 1). A tenant's first run
 * taking the newcomers' reserve, and a run with `X-Dedup`, are not given to them (run-insert.ts
 * inserts those alone).
 */
export class RunInsertBatches {
  readonly pending: InsertBatcher<{ values: RunInsertValues; claim: { owner: string; leaseMs: number } | null }, { current: boolean; id: string | null; claimed: boolean }>;
  readonly written: InsertBatcher<{ values: RunInsertValues; flush: FlushParams }, EagerInsertOutcome>;

  constructor(ds: DataSource, opts: { maxInFlight: number; maxBatch: number } = { maxInFlight: 2, maxBatch: 64 }) {
    this.pending = new InsertBatcher(
      (items) => insertPendingRuns(ds, items),
      (it) => insertPendingRun(ds, it.values, it.claim),
      opts,
    );
    this.written = new InsertBatcher(
      (items) => insertWrittenRuns(ds, items),
      (it) => insertWrittenRun(ds, it.values, it.flush),
      opts,
    );
  }
}
