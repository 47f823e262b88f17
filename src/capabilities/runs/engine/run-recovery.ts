import type { BatchEvent } from '../../../platform/events/event-log.service';
import type { RunNodeEntity } from '../run-node.entity';
import type { DagNode, WorkflowDefinition } from '../workflow-definition';
import type { ClaimedRow, NodeWrite } from './run-store';

/** What the engine writes to end a run it cannot go on with, besides `run.failed`. */
export interface FailureBatch {
  error: { code: string; message: string };
  events: BatchEvent[];
  writes: NodeWrite[];
}

/**
 * An engine fault (not a node's): the run fails with `engine_error`, and its node rows are made to
 * agree: a node written running or waiting fails with the same error, a node never started is skipped.
 */
export function engineFaultBatch(def: WorkflowDefinition | undefined, state: ReadonlyMap<string, RunNodeEntity>, firstStart: boolean, row: ClaimedRow): FailureBatch {
  const error = { code: 'engine_error', message: 'The run engine could not execute this run.' };
  const events: BatchEvent[] = [];
  const writes: NodeWrite[] = [];
  if (firstStart) events.push({ type: 'run.started', payload: { workflowId: row.workflow_id || 'unknown', inputs: row.inputs ?? {} } });
  // The fault may be the definition itself (a run written by something else than POST /v1/runs).
  const nodes = Array.isArray(def?.nodes) ? def.nodes.filter((n) => n && typeof n.id === 'string') : [];
  for (const n of nodes) {
    const s = state.get(n.id);
    if (s?.status === 'running' || s?.status === 'waiting') {
      events.push({ type: 'node.failed', nodeId: n.id, payload: { nodeId: n.id, error, attempts: s.attempt + 1 } });
      writes.push({ nodeId: n.id, typeId: n.typeId, status: 'failed', attempt: s.attempt, error });
    } else if (!s) {
      events.push({ type: 'node.skipped', nodeId: n.id, payload: { nodeId: n.id, reason: 'engine-error' } });
      writes.push({ nodeId: n.id, typeId: n.typeId, status: 'skipped', attempt: 0 });
    }
  }
  return { error, events, writes };
}

/**
 * A node a replica that died left in flight which may not be repeated (its replay policy
 * `non-deterministic` and its type not one that resumes in flight): it fails with `node_interrupted`.
 */
export async function unsafeInFlight(
  def: WorkflowDefinition,
  state: ReadonlyMap<string, RunNodeEntity>,
  unsafe: (n: DagNode) => Promise<string | undefined>,
): Promise<(FailureBatch & { nodeId: string }) | undefined> {
  for (const n of def.nodes) {
    const s = state.get(n.id);
    if (s?.status !== 'running') continue;
    const policy = await unsafe(n);
    if (!policy) continue;
    const error = { code: 'node_interrupted', message: `Node ${n.id} was in flight when its replica stopped; it is not safe to repeat (replayPolicy ${policy}).` };
    return {
      nodeId: n.id,
      error,
      events: [{ type: 'node.failed', nodeId: n.id, payload: { nodeId: n.id, error, attempts: s.attempt + 1 } }],
      writes: [{ nodeId: n.id, typeId: n.typeId, status: 'failed', attempt: s.attempt, error }],
    };
  }
  return undefined;
}
