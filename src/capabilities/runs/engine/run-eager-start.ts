import type { NodeArtifacts, NodeExecutionContext } from '@openwop-host/plugin-sdk';
import type { effectRunner } from '../../../platform/idempotency/activity-ledger.service';
import type { Execution } from './run-execution.types';
import type { FlushParams, FlushResult, RunStore, RunStoreTx } from './run-store';
import { LeaseLost } from './run-writer';

/** The run an execution was started for was not inserted (refused, failed, or abandoned): the execution writes nothing. */
export class RunNotInserted extends LeaseLost {
  constructor() {
    super('the run was not inserted');
    this.name = 'RunNotInserted';
  }
}

/** The execution of a run started before its insert ended without writing (the replica is stopping): the run is inserted the usual way. */
export class EagerStartAbandoned extends Error {
  constructor() {
    super('the run was not written by its execution');
    this.name = 'EagerStartAbandoned';
  }
}

/** What the insert of a run with its first write answered. */
export interface EagerInsertOutcome {
  /** false: the tenant's chains moved since the run was planned (nothing was inserted). */
  current: boolean;
  /** false with `current`: the Idempotency-Key was taken by another run (or, with `first` false, nothing was inserted). */
  inserted: boolean;
  /** false: the run was to take the newcomers' reserve, and its tenant already has runs executing or queued (nothing was inserted). */
  first?: boolean;
  result?: FlushResult;
}

/**
 * The store of an execution started before its run is inserted (a run whose every node is
 * `deterministic`, created here with a free slot): the execution's first write is the run's insert
 * (one statement for the row, its node rows and its events), every later one goes to the engine's
 * store. `inserted` settles with the insert's answer; when the insert is refused or fails, the
 * execution is stopped as if it had lost its lease (it wrote nothing and had no effect: its nodes
 * are deterministic, and what reaches the database from a node waits for the insert).
 */
export class EagerStart implements RunStore {
  private state: 'unwritten' | 'inserting' | 'inserted' | 'refused' = 'unwritten';
  private settle!: { resolve(o: EagerInsertOutcome): void; reject(e: unknown): void };
  /** The insert's answer (rejected with its error, or with EagerStartAbandoned). */
  readonly inserted: Promise<EagerInsertOutcome>;
  /** Resolved once the execution has ended (the engine no longer holds the run). */
  readonly over: Promise<void>;
  private finish!: () => void;

  constructor(
    private readonly base: RunStore,
    private readonly insert: (f: FlushParams) => Promise<EagerInsertOutcome>,
  ) {
    this.inserted = new Promise<EagerInsertOutcome>((resolve, reject) => (this.settle = { resolve, reject }));
    // Handled by the creation; an abandoned start that nobody awaits is not an unhandled rejection.
    this.inserted.catch(() => undefined);
    this.over = new Promise<void>((resolve) => (this.finish = resolve));
  }

  /** Whether the run's insert was sent (its first write asked for). */
  get sent(): boolean {
    return this.state !== 'unwritten';
  }

  /** Whether the run row exists (its insert committed). */
  get written(): boolean {
    return this.state === 'inserted';
  }

  async flush(f: FlushParams): Promise<FlushResult> {
    if (this.state === 'inserted') return this.base.flush(f);
    // The writer sends one write at a time: a second one before the insert answered is one after it failed.
    if (this.state !== 'unwritten') throw new RunNotInserted();
    this.state = 'inserting';
    let outcome: EagerInsertOutcome;
    try {
      outcome = await this.insert(f);
    } catch (e) {
      this.state = 'refused';
      this.settle.reject(e);
      throw new RunNotInserted();
    }
    this.state = outcome.inserted && outcome.result ? 'inserted' : 'refused';
    this.settle.resolve(outcome);
    if (this.state !== 'inserted') throw new RunNotInserted();
    return outcome.result!;
  }

  /** The execution ended: without a write, the run was never inserted (the creation inserts it the usual way). */
  ended(): void {
    this.finish();
    if (this.state !== 'unwritten') return;
    this.state = 'refused';
    this.settle.reject(new EagerStartAbandoned());
  }

  eventExists(p: { tenant: string; runId: string; eventId: string }): Promise<boolean> {
    return this.written ? this.base.eventExists(p) : Promise.resolve(false);
  }

  loadNodes(p: { runId: string }) {
    return this.written ? this.base.loadNodes(p) : Promise.resolve([]);
  }

  recordedOutcomes(p: { runId: string; tenant: string }) {
    return this.base.recordedOutcomes(p);
  }

  cancelReason(p: { runId: string }): Promise<string | undefined> {
    return this.written && this.base.cancelReason ? this.base.cancelReason(p) : Promise.resolve(undefined);
  }

  transaction<T>(work: (tx: RunStoreTx) => Promise<T>): Promise<T> {
    // An execution writes its pending progress (the insert) before it opens a transaction.
    if (!this.written) return Promise.reject(new RunNotInserted());
    return this.base.transaction(work);
  }
}

/**
 * What a node stores or performs through the host (`ctx.artifacts`, `ctx.effect`), once its run is
 * inserted: an execution started before its insert writes it first (`write`: the execution's flush),
 * so nothing of a node precedes its run. (`ctx.emit` writes first anyway; a gate is opened after a write.)
 */
export function afterInsert(exec: Pick<Execution, 'eager'>, write: () => Promise<void>) {
  const when = <R>(work: () => Promise<R>): Promise<R> => (exec.eager && !exec.eager.written ? write().then(work) : work());
  return {
    artifacts: (store: NodeArtifacts): NodeArtifacts => ({ put: (input) => when(() => store.put(input)) }),
    effect:
      (perform: ReturnType<typeof effectRunner>): NodeExecutionContext['effect'] =>
      <T>(providerKey: string, work: (logicalInvocationId: string) => Promise<T>) =>
        when(() => perform(providerKey, work)),
    /** Any other read that needs the run row to exist (`ctx.workspace`, whose snapshot point is recorded after the insert). */
    read: when,
  };
}
