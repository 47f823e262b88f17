import { InterruptRequest, NodeExecutionError } from '@openwop-host/plugin-sdk';
import type { BatchEvent } from '../../../platform/events/event-log.service';
import type { Principal } from '../../../platform/identity/principal';
import { AuthorSchemas } from '../../../platform/schemas/author-schemas';
import type { ApprovalsService, GateRequirements } from '../../approvals';
import type { ClaimedRow, NodeWrite, RunStoreTx } from './run-store';
import type { DagNode } from '../workflow-definition';

/** The approval-gate subject kind of suspended run nodes. */
export const RUN_GATE_SUBJECT = 'run-node';

/**
 * What a suspended node asked for. Beyond the SDK's request, the host's own nodes may set the
 * artifact type and, for `core.approval`, who may vote: whether the run's owner may approve, and the
 * scope designated to record votes for named voters.
 */
export type SuspendRequest = InterruptRequest & { artifactType?: string; allowSelfApproval?: boolean; namedVotersScope?: string; gate?: GateRequirements };

/** Thrown inside a node while its gate is not decided: the node suspends. */
export class Suspend extends Error {
  constructor(readonly request: SuspendRequest) {
    super('suspend');
  }
}

/**
 * ctx.interrupt's request, once its resume schema compiles (patterns on the linear-time engine): a
 * schema nothing could be checked against would leave a run no answer resolves, so the node fails.
 */
export function checkedInterrupt<R extends InterruptRequest>(req: R, nodeId: string): R {
  const [first, ...more] = req.resumeSchema ? AuthorSchemas.shared().problems(req.resumeSchema) : [];
  if (first) {
    const rest = more.length ? ` (and ${more.length} more)` : '';
    throw new NodeExecutionError('invalid_resume_schema', `The resume schema of node ${nodeId}'s ${req.kind} does not compile: ${first.path || '/'}: ${first.message}${rest}.`);
  }
  return req;
}

/** ctx.interrupt's answer from a decided gate: its resume value when granted, else the node fails. */
export function interruptAnswer(gate: { state: string; resume_value: unknown }, req: InterruptRequest, nodeId: string): unknown {
  if (gate.state === 'granted') return gate.resume_value ?? {};
  if (gate.state === 'expired') throw new NodeExecutionError('interrupt_expired', `The ${req.kind} interrupt of node ${nodeId} expired before it was resolved.`);
  if (gate.state === 'cancelled') throw new NodeExecutionError('interrupt_cancelled', `The ${req.kind} interrupt of node ${nodeId} was cancelled.`);
  throw new NodeExecutionError('interrupt_rejected', `The ${req.kind} interrupt of node ${nodeId} was rejected.`);
}

/**
 * Opens the gates of suspended nodes inside the suspension's transaction (reusing a node's gate that
 * is still pending) and answers their `waiting` node rows and `node.suspended` events.
 */
export async function openGates(
  tx: RunStoreTx,
  approvals: Pick<ApprovalsService, 'open' | 'stateOf'>,
  row: ClaimedRow,
  principal: Principal,
  nodes: Array<{ node: DagNode; attempt: number; suspend?: SuspendRequest; gateId: string | null }>,
): Promise<{ writes: NodeWrite[]; events: BatchEvent[] }> {
  const writes: NodeWrite[] = [];
  const events: BatchEvent[] = [];
  for (const o of nodes) {
    const n = o.node;
    let gateId = o.gateId;
    // The approvals capability owns the gate table: its state through its public service, in this transaction.
    const pending = gateId ? (await approvals.stateOf(gateId, { manager: tx.manager }))?.state : undefined;
    if (!gateId || pending !== 'pending') {
      const gate = await approvals.open(
        tx.manager,
        {
          subjectKind: RUN_GATE_SUBJECT,
          subjectId: row.id,
          tenant: row.tenant,
          workspaceKey: row.workspace ?? '',
          artifactRef: `run:${row.id}#${n.id}`,
          artifactType: o.suspend?.artifactType ?? 'run-step',
          title: o.suspend?.title ?? `Approve step ${n.id}`,
          runStep: { runId: row.id, nodeId: n.id, workflowId: row.workflow_id ?? null },
          interrupt: {
            kind: o.suspend?.kind ?? 'approval',
            resumeSchema: o.suspend?.resumeSchema,
            data: o.suspend?.data,
            quorum: o.suspend?.requiredApprovals,
            rejectionPolicy: o.suspend?.rejectionPolicy,
            allowSelfApproval: o.suspend?.allowSelfApproval,
            namedVotersScope: o.suspend?.namedVotersScope,
            gate: o.suspend?.gate,
          },
        },
        principal,
      );
      gateId = gate.id;
    }
    writes.push({ nodeId: n.id, typeId: n.typeId, status: 'waiting', attempt: o.attempt, gateId });
    events.push({ type: 'node.suspended', nodeId: n.id, payload: { nodeId: n.id, interruptId: gateId, kind: o.suspend?.kind ?? 'approval', key: `${RUN_GATE_SUBJECT}:${row.id}:${gateId}` } });
  }
  return { writes, events };
}
