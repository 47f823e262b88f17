import { NodeExecutionContext, NodeExecutionError } from '@openwop-host/plugin-sdk';
import type { Principal } from '../../../platform/identity/principal';
import type { DispatchRecordContext, DispatchSubject, DispatchVerdict, ToolDispatchService } from '../../tool-catalog';
import { Suspend } from '../engine/run-gates';

/**
 * A run step's tool call asks the dispatch policy (the tool-catalog's one decision) and records the
 * answer, whoever makes the call (`core.tool`, `ctx.mcp.callTool`): `deny` fails the node
 * `tool_dispatch_denied`; `approve` waits on an approval gate (recorded when it opens and when it is
 * decided) and a rejection fails the node `approval_denied`; the tool is called only after.
 */
export async function governedCall(dispatch: ToolDispatchService, principal: Principal, subject: DispatchSubject, ctx: NodeExecutionContext): Promise<DispatchVerdict> {
  const verdict = await dispatch.decide(principal, subject, { runId: ctx.runId, nodeId: ctx.nodeId });
  const where: DispatchRecordContext = { path: 'run', runId: ctx.runId, nodeId: ctx.nodeId, emit: (type, payload) => ctx.emit(type, payload) };
  if (verdict.decision === 'deny') {
    await dispatch.record(principal, verdict, where);
    throw new NodeExecutionError('tool_dispatch_denied', `The dispatch policy denies calls of ${subject.toolId} (tier ${subject.safetyTier}, policy revision ${verdict.policyRevision}).`);
  }
  if (verdict.decision === 'approve') {
    let outcome: 'granted' | 'denied';
    try {
      outcome = await ctx.awaitApproval({ title: `Allow the call of ${subject.toolId} (${subject.safetyTier} tier) in run ${ctx.runId}`, artifactType: 'tool-call' });
    } catch (e) {
      // The gate opens when the run parks; the node runs again once it is decided.
      if (e instanceof Suspend) await dispatch.record(principal, verdict, { ...where, approval: 'pending' });
      throw e;
    }
    await dispatch.record(principal, verdict, { ...where, approval: outcome });
    if (outcome !== 'granted') throw new NodeExecutionError('approval_denied', `The call of ${subject.toolId} was not approved.`);
    return verdict;
  }
  await dispatch.record(principal, verdict, where);
  return verdict;
}
