import type { DataSource, EntityManager } from 'typeorm';
import { isDatabaseUnavailable } from '../../../platform/database/database-driver';
import type { WorkflowDefinition } from '../workflow-definition';
import type { NodeExecutorRegistry } from './node-executor-registry.service';
import { EagerStartAbandoned } from './run-eager-start';
import type { RunEngineService } from './run-engine.service';
import type { SlotReservation } from './run-claimer';
import { insertWrittenRun, RunInsertValues } from './run-insert';
import type { RunInsertBatches } from './run-insert-batcher';
import type { ClaimedRow, FlushParams } from './run-store';

/** What an insert of a created run answered: `current` false, the chains moved (nothing inserted); `inserted` false with `current`, its Idempotency-Key is taken. */
export interface InsertOutcome {
  current: boolean;
  inserted: boolean;
}

/** The row's insert without its first write (RunCreationService's, which retries a dedup scope's conflict): `claimed` when the insert claimed it under `claim`. */
export type InsertRow = (claim: SlotReservation | undefined, firstAttempt: number) => Promise<InsertOutcome & { claimed: boolean }>;

/**
 * How a run created here is inserted and started (RunCreationService.create). Outside a caller's
 * transaction its insert claims it for this replica when a slot is promised to it (RunEngineService.reserve):
 * a slot of the capacity, or, on a saturated replica with fair claims, a slot of the newcomers'
 * reserve for a tenant's first run, which the insert claims only when the database finds no other
 * run of the tenant executing or queued (docs/operations.md §Fair scheduling). A run of
 * deterministic nodes starts before its insert, which then carries its first write (a run whose
 * nodes complete at once is inserted finished, in one round trip). A run left unclaimed is announced
 * to the replicas (its notification names it) and this one is woken.
 */
export async function insertAndStart(
  deps: { ds: DataSource; engine: RunEngineService; executors: NodeExecutorRegistry; batches?: RunInsertBatches },
  p: { values: RunInsertValues; definition: WorkflowDefinition; claimed: () => ClaimedRow; manager?: EntityManager; dedup: boolean; insertRow: InsertRow },
): Promise<InsertOutcome> {
  const { engine } = deps;
  const tenant = p.values.tenant;
  let claim = p.manager ? undefined : engine.reserve(tenant);
  let firstAttempt = 0;
  // Not with X-Dedup: its claim is the row of an active run.
  if (claim && !p.dedup && startsEagerly(deps.executors, p.definition)) {
    const started = await insertStarted(deps, p.values, p.claimed(), claim);
    if (typeof started === 'object') return started;
    // Inserted the usual way: claimed if there is room again (none while the replica stops; not the
    // reserve for a run that is not its tenant's first), and a row the database did not write counts
    // as the insert's first attempt.
    claim = engine.reserve(tenant, started !== 'not-first');
    if (started === 'lost') firstAttempt = 1;
  }
  const sentAt = Date.now();
  let row: InsertOutcome & { claimed: boolean };
  try {
    row = await p.insertRow(claim, firstAttempt);
  } catch (e) {
    if (claim) engine.unreserve(claim);
    throw e;
  }
  if (claim && !(row.inserted && row.claimed)) engine.unreserve(claim);
  // Left unclaimed (no free slot here, or not its tenant's first run): claimed when a slot frees,
  // here or on the replica its notification wakes.
  if (row.inserted && !row.claimed && !p.manager) engine.noteClaimable({ runId: p.values.runId, tenant });
  if (row.inserted && row.claimed && claim) engine.adopt(p.claimed(), sentAt, claim);
  return { current: row.current, inserted: row.inserted };
}

/**
 * A run started on this replica before its insert (its slot reserved): the insert goes with the
 * execution's first write. Answers the insert's outcome; `abandoned` when the execution could not
 * start or ended without writing (the replica is stopping), `lost` when the database wrote no row
 * for a run without an Idempotency-Key, `refused` when it refused the write (not for being away),
 * `not-first` when it was to take the newcomers' reserve and is not its tenant's first run: the
 * caller then inserts it the usual way.
 */
async function insertStarted(
  deps: { ds: DataSource; engine: RunEngineService; batches?: RunInsertBatches },
  v: RunInsertValues,
  row: ClaimedRow,
  claim: SlotReservation,
): Promise<InsertOutcome | 'abandoned' | 'lost' | 'refused' | 'not-first'> {
  // With the inserts of other requests waiting at the time (RunInsertBatches); a tenant's first run
  // taking the newcomers' reserve alone, its check seeing the runs committed before it.
  const batches = deps.batches;
  const insert = (f: FlushParams) => (batches && !claim.newcomer ? batches.written.submit({ values: v, flush: f }) : insertWrittenRun(deps.ds, v, f, claim.newcomer));
  const started = deps.engine.startEager(row, insert, claim);
  if (!started) return 'abandoned';
  try {
    const outcome = await started.inserted;
    if (outcome.first === false) {
      // Nothing was inserted: once the engine has let go of the execution, as for a refused one.
      await started.over;
      return 'not-first';
    }
    // Without a key nothing can conflict: an empty answer is a row not written, not a replay.
    if (!(outcome.current && !outcome.inserted && v.idempotencyKey === null)) return outcome;
  } catch (e) {
    if (e instanceof EagerStartAbandoned) return 'abandoned';
    if (isDatabaseUnavailable(e)) throw e;
    // The database refused the run's first write, not the request (e.g. a node's output it cannot
    // store): the run is inserted the usual way, and its execution records the fault on it.
    await started.over;
    return 'refused';
  }
  // Inserted again under the same id: once the engine has let go of the execution that was refused.
  await started.over;
  return 'lost';
}

/** Whether a run of `definition` starts before its insert: every node's executor is `deterministic`, whatever its config. */
export function startsEagerly(executors: NodeExecutorRegistry, definition: WorkflowDefinition): boolean {
  return definition.nodes.every((n) => {
    const ex = executors.get(n.typeId);
    return ex?.replayPolicy === 'deterministic' && !ex.provider.replayPolicyOf;
  });
}
