import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

/** `core.noop`: does nothing; its outputs are its (templated) config, so chains can shape data with it. */
@Injectable()
@NodeExecutor({ typeId: 'core.noop', replayPolicy: 'deterministic' })
export class CoreNoopExecutor implements NodeExecutorProvider {
  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    return { outputs: ctx.config };
  }
}
