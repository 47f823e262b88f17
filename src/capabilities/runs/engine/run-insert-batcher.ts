import type { DataSource } from 'typeorm';
import type { FlushParams } from './run-store';
import { GroupCommit } from './run-flush-batcher';
import type { EagerInsertOutcome } from './run-eager-start';
import { insertPendingRun, insertWrittenRun, RunInsertValues } from './run-insert';
import { insertPendingRuns, insertWrittenRuns } from './run-insert-batch';
import { DEFAULT_INSERT_BATCHING, InsertBatchOptions } from '../runs.settings';

/**
 * Group commit of created runs' inserts (GroupCommit, as the engine's writes are). An insert of an
 * idle replica leaves at once (in the same turn of the event loop), in the statement it would have
 * had alone (`sendOne`); inserts that arrive while `maxInFlight` statements are out wait and leave
 * together, as one statement (`sendMany`: one round trip and one commit for many runs). A batch that
 * fails for a reason of its own (a row the database refuses) is sent again run by run, so only the
 * offending run sees the error; while the database is away every run of the batch gets the error.
 */
export class InsertBatcher<I, O> extends GroupCommit<I, O> {
  constructor(sendMany: (items: I[]) => Promise<O[]>, sendOne: (item: I) => Promise<O>, opts: InsertBatchOptions = DEFAULT_INSERT_BATCHING) {
    super((items) => (items.length === 1 ? sendOne(items[0]).then((o) => [o]) : sendMany(items)), {
      maxInFlight: opts.maxInFlight,
      maxBatch: opts.maxBatch,
      leaveWhenIdle: opts.leaveWhenIdle ?? true,
    });
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

  constructor(ds: DataSource, opts: InsertBatchOptions = DEFAULT_INSERT_BATCHING) {
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
