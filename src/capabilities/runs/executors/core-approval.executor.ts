import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';
import { isValidScope } from '../../../platform/identity/scopes';
import type { SuspendRequest } from '../engine/run-gates';

/** The resume schema of an approval interrupt: the accept / reject vocabulary, an optional named voter and feedback. */
export const APPROVAL_RESUME_SCHEMA: Record<string, unknown> = {
  type: 'object',
  required: ['action'],
  properties: {
    action: { type: 'string', enum: ['accept', 'reject'] },
    voter: { type: 'string', minLength: 1, maxLength: 256 },
    feedback: { type: 'string', maxLength: 4000 },
  },
  additionalProperties: false,
};

const MAX_APPROVERS = 100;
/** The longest a gate's own `timeoutMs` may be: 366 days. */
const MAX_TIMEOUT_MS = 366 * 24 * 3_600_000;
const ON_TIMEOUT = ['reject', 'approve', 'escalate'];

/** `namedVoters: {recordedBy: <scope>}`, the one shape the config takes. */
function namedVotersProblem(v: unknown): string | undefined {
  const o = v as Record<string, unknown> | null;
  if (!o || typeof o !== 'object' || Array.isArray(o) || Object.keys(o).some((k) => k !== 'recordedBy') || typeof o.recordedBy !== 'string' || !isValidScope(o.recordedBy)) {
    return 'core.approval config.namedVoters must be {recordedBy: <scope>}, the scope (name:action) a credential needs to record votes for named voters';
  }
  return undefined;
}

/**
 * `core.approval {title?, requiredApprovals?, rejectionPolicy?, allowSelfApproval?, namedVoters?, approversList?, timeoutMs?, onTimeout?}`:
 * suspends the run in `waiting-approval` on an RFC 0051 approval gate (an `approval` interrupt); the
 * node completes when the gate is granted (by `requiredApprovals` distinct voters, default the host's
 * quorum) and fails with `approval_denied` when it is rejected (one reject under `single-veto`, the
 * default; rejects from more than half of the quorum under `majority`), cancelled or expires.
 * `allowSelfApproval: false` keeps the run's owner from approving (default: the host's
 * `proposals.approval.allowSelfApproval`); `namedVoters.recordedBy` names a scope whose holders may
 * record votes for named voters on this gate (a clerk recording a panel), besides `approvals:act-as`;
 * `approversList` names the principals who alone may resolve it (any other resolver is 403).
 * `timeoutMs` is the gate's own deadline (else the host's approval timeout): left unresolved past it, the
 * host resolves the gate rejected and the node fails like a reject (RFC 0223), whatever `onTimeout`
 * (`reject`, `approve`, `escalate`) says: a timeout never grants. A failed gate fails the run unless an
 * `any_failed` / `all_complete` edge routes the failure (workflow-definition.ts).
 * Re-executing it after a takeover reads the same gate, so it is idempotent.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.approval', replayPolicy: 'idempotent' })
export class CoreApprovalExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    const q = config.requiredApprovals;
    if (q !== undefined && (!Number.isInteger(q) || (q as number) < 1 || (q as number) > MAX_APPROVERS)) problems.push(`core.approval config.requiredApprovals must be an integer from 1 to ${MAX_APPROVERS}`);
    if (config.rejectionPolicy !== undefined && config.rejectionPolicy !== 'single-veto' && config.rejectionPolicy !== 'majority') problems.push('core.approval config.rejectionPolicy must be single-veto or majority');
    if (config.title !== undefined && typeof config.title !== 'string') problems.push('core.approval config.title must be a string');
    if (config.allowSelfApproval !== undefined && typeof config.allowSelfApproval !== 'boolean') problems.push('core.approval config.allowSelfApproval must be true or false');
    const named = config.namedVoters === undefined ? undefined : namedVotersProblem(config.namedVoters);
    if (named) problems.push(named);
    const list = config.approversList;
    if (list !== undefined && (!Array.isArray(list) || !list.length || list.length > MAX_APPROVERS || list.some((a) => typeof a !== 'string' || !a.trim() || a.length > 256))) {
      problems.push(`core.approval config.approversList must be 1 to ${MAX_APPROVERS} principal ids (non-empty strings of at most 256 characters)`);
    }
    // The interrupt record's refKinds is ["principal"]: group and role refs are not resolved here, so a gate naming them is refused rather than left open to any holder of the scope.
    const t = config.timeoutMs;
    if (t !== undefined && (!Number.isInteger(t) || (t as number) < 1 || (t as number) > MAX_TIMEOUT_MS)) problems.push(`core.approval config.timeoutMs must be an integer number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`);
    if (config.onTimeout !== undefined && !ON_TIMEOUT.includes(config.onTimeout as string)) problems.push(`core.approval config.onTimeout must be one of ${ON_TIMEOUT.join(', ')}`);
    for (const k of ['approverGroupRefs', 'approverRoleRefs']) if (config[k] !== undefined) problems.push(`core.approval config.${k} is not supported by this host (refKinds: principal); name the approvers in approversList`);
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const title = typeof ctx.config.title === 'string' && ctx.config.title ? ctx.config.title : `Approve step ${ctx.nodeId} of run ${ctx.runId}`;
    const recordedBy = (ctx.config.namedVoters as { recordedBy?: unknown } | undefined)?.recordedBy;
    // The host's request (the SDK's and who may vote): the host's context passes it to the gate unchanged.
    const request: SuspendRequest = {
      kind: 'approval',
      title,
      resumeSchema: APPROVAL_RESUME_SCHEMA,
      ...(Number.isInteger(ctx.config.requiredApprovals) ? { requiredApprovals: ctx.config.requiredApprovals as number } : {}),
      ...(ctx.config.rejectionPolicy === 'majority' || ctx.config.rejectionPolicy === 'single-veto' ? { rejectionPolicy: ctx.config.rejectionPolicy } : {}),
      ...(typeof ctx.config.allowSelfApproval === 'boolean' ? { allowSelfApproval: ctx.config.allowSelfApproval } : {}),
      ...(typeof recordedBy === 'string' && isValidScope(recordedBy) ? { namedVotersScope: recordedBy } : {}),
      // The gate's own deadline; `onTimeout` is not read: a timeout never grants (RFC 0223 §C), it rejects.
      ...(Number.isInteger(ctx.config.timeoutMs) ? { gate: { timeoutMs: ctx.config.timeoutMs as number } } : {}),
      // Who may resolve it (RFC 0173 §B), kept with the gate's data and enforced at every decision.
      ...(Array.isArray(ctx.config.approversList) ? { data: { approversList: (ctx.config.approversList as string[]).map((a) => a.trim()) } } : {}),
    };
    let value: unknown;
    try {
      value = await ctx.interrupt(request);
    } catch (e) {
      if (e instanceof NodeExecutionError && e.code.startsWith('interrupt_')) throw new NodeExecutionError('approval_denied', 'The approval gate was denied or expired.');
      throw e;
    }
    if ((value as { action?: unknown })?.action === 'reject') throw new NodeExecutionError('approval_denied', 'The approval gate was denied or expired.');
    return { outputs: { approved: true } };
  }
}
