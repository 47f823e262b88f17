import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

const CODE = /^[a-z][a-z0-9_.]{0,63}$/;

/**
 * `core.fail {code?, message?}`: fails the node (and so the run) with the given error: a chain's
 * explicit error exit. `code` defaults to `node_failed`.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.fail', replayPolicy: 'deterministic' })
export class CoreFailExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    if (config.code !== undefined && (typeof config.code !== 'string' || !CODE.test(config.code))) problems.push('core.fail config.code must be a lower-case error code (a-z, 0-9, _ and .)');
    if (config.message !== undefined && (typeof config.message !== 'string' || config.message.length > 1000)) problems.push('core.fail config.message must be a string of at most 1000 characters');
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const code = typeof ctx.config.code === 'string' && CODE.test(ctx.config.code) ? ctx.config.code : 'node_failed';
    const message = typeof ctx.config.message === 'string' && ctx.config.message ? ctx.config.message : 'The chain failed at this node.';
    throw new NodeExecutionError(code, message);
  }
}
