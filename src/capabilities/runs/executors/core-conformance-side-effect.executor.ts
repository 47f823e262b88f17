import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

/** The provider key of the conformance effect in the invocation log. */
export const CONFORMANCE_SIDE_EFFECT_KEY = 'openwop-host:conformance-side-effect';

/**
 * `core.conformance.side-effect`: the conformance-reserved side-effecting node (fixtures conformance-replay-side-effect
 * and conformance-replay-ordinal-loop). What matters is that it is classified side-effecting (`non-deterministic`,
 * the default), not what its effect is: live, it performs one logical effect through `ctx.effect`, which reaches
 * nothing outside the host but claims and records one invocation-log entry per execution of the node (its identity
 * carries the execution ordinal), and answers `{status: 200, effectId}` with that entry's identity. A retry or a
 * takeover of the same execution gets the recorded entry back; a replay fork never executes it (the engine resolves
 * it from the source run's outcome of the same execution ordinal, or fails it closed with `replay_source_missing`).
 */
@Injectable()
@NodeExecutor({ typeId: 'core.conformance.side-effect' })
export class CoreConformanceSideEffectExecutor implements NodeExecutorProvider {
  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    if (!ctx.effect) throw new NodeExecutionError('capability_not_provided', 'This host gave the node no effect seam.');
    const effectId = await ctx.effect(CONFORMANCE_SIDE_EFFECT_KEY, (logicalInvocationId) => Promise.resolve(logicalInvocationId));
    return { outputs: { status: 200, effectId } };
  }
}
