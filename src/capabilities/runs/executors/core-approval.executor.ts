import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

/**
 * `core.approval {title?}`: suspends the run in `waiting-approval` on an RFC 0051 approval gate;
 * the node completes when the gate is granted and fails with `approval_denied` when it is denied or
 * expires. Re-executing it after a takeover reads the same gate, so it is idempotent.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.approval', replayPolicy: 'idempotent' })
export class CoreApprovalExecutor implements NodeExecutorProvider {
  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const title = typeof ctx.config.title === 'string' && ctx.config.title ? ctx.config.title : `Approve step ${ctx.nodeId} of run ${ctx.runId}`;
    const decision = await ctx.awaitApproval({ title, artifactType: 'run-step' });
    if (decision !== 'granted') throw new NodeExecutionError('approval_denied', 'The approval gate was denied or expired.');
    return { outputs: { approved: true } };
  }
}
