import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,127}$/;

/**
 * `core.setVariable` (node-packs.md, reserved core typeIds): writes run variables. Config
 * `{name, value}` for one, or `{variables: {name: value, ...}}` for several (values templated like
 * any config). The writes are the node's `outputs.variables`, which the run's variable bag folds in
 * the chain's order (run-variables.ts); `inputs` is not a variable name.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.setVariable', replayPolicy: 'deterministic' })
export class CoreSetVariableExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const names = config.variables && typeof config.variables === 'object' && !Array.isArray(config.variables) ? Object.keys(config.variables) : [];
    if (config.name !== undefined) names.push(String(config.name));
    if (!names.length) return ['core.setVariable needs config.name (with config.value) or config.variables'];
    return names.filter((n) => !NAME.test(n) || n === 'inputs').map((n) => `core.setVariable: "${n}" is not a variable name`);
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const variables: Record<string, unknown> = {};
    const many = ctx.config.variables;
    if (many && typeof many === 'object' && !Array.isArray(many)) Object.assign(variables, many);
    if (typeof ctx.config.name === 'string') variables[ctx.config.name] = ctx.config.value ?? null;
    return { outputs: { variables } };
  }
}
