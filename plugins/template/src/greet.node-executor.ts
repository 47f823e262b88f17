import { Inject, Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider, PLUGIN_CONTEXT, PluginContext } from '@openwop-host/plugin-sdk';
import { greet, GreetingsOptions } from './options';

export const GREET_NODE_TYPE = 'vendor.example.greet';

/**
 * A node executor: runs the `vendor.example.greet` nodes of a workflow chain
 * (`{"id": "hi", "typeId": "vendor.example.greet", "config": {"name": "{{inputs.name}}"}}`).
 */
@Injectable()
@NodeExecutor({ typeId: GREET_NODE_TYPE, replayPolicy: 'deterministic' })
export class GreetNodeExecutor implements NodeExecutorProvider {
  constructor(@Inject(PLUGIN_CONTEXT) private readonly ctx: PluginContext<GreetingsOptions>) {}

  validateConfig(config: Record<string, unknown>): string[] {
    return typeof config.name === 'string' && config.name ? [] : ['config.name must be a non-empty string'];
  }

  async execute(node: NodeExecutionContext): Promise<NodeExecutionResult> {
    if (node.signal.aborted) throw new NodeExecutionError('aborted', 'the run stopped the node');
    const name = node.config.name;
    if (typeof name !== 'string' || !name) throw new NodeExecutionError('invalid_config', 'config.name must be a non-empty string');
    return { outputs: { greeting: greet(this.ctx.config, name) } };
  }
}
