import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

const isTemplate = (v: unknown) => typeof v === 'string' && /\{\{.*\}\}/.test(v);

/**
 * `core.workspace.read {path?, prefix?}`: what the run's workspace snapshot (RFC 0059 §D, `ctx.workspace`)
 * holds, as the node's outputs: `file`, the file at `path` as of the run's start (`null`: none then), and
 * `files`, the metadata of the files under `prefix` (`""`: all). It reads only the snapshot, so it is
 * `deterministic`: a replay executes it again and reads the source run's snapshot.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.workspace.read', replayPolicy: 'deterministic' })
export class WorkspaceReadExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    if (config.path === undefined && config.prefix === undefined) problems.push('core.workspace.read needs config.path or config.prefix');
    for (const k of ['path', 'prefix'] as const) {
      if (config[k] !== undefined && typeof config[k] !== 'string' && !isTemplate(config[k])) problems.push(`core.workspace.read config.${k} must be a string`);
    }
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    if (!ctx.workspace) throw new NodeExecutionError('capability_not_provided', 'This host does not serve the agent workspace.', { capability: 'workspace' });
    const outputs: Record<string, unknown> = {};
    if (ctx.config.path !== undefined) outputs.file = await ctx.workspace.get(ctx.config.path as string);
    if (ctx.config.prefix !== undefined) outputs.files = await ctx.workspace.list(ctx.config.prefix as string);
    return { outputs };
  }
}
