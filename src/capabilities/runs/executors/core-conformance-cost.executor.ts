import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

/**
 * `core.conformance.cost {usd}`: a step that reports the cost its config declares, the way any paid
 * executor reports one (`costUsd` of its result), so a run's cost accrues without a paid provider.
 * The budget fixture (`conformance-budget-cost`) chains it to drive RFC 0084 budgets to exhaustion.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.conformance.cost', replayPolicy: 'deterministic' })
export class CoreConformanceCostExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const usd = config.usd;
    return typeof usd === 'number' && Number.isFinite(usd) && usd >= 0 && usd <= 1000 ? [] : ['core.conformance.cost needs config.usd, a number from 0 to 1000'];
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const usd = ctx.config.usd as number;
    return { outputs: { costUsd: usd }, costUsd: usd };
  }
}
