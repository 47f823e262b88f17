import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionResult, NodeExecutor, NodeExecutorProvider, ToolReplayPolicy } from '@openwop-host/plugin-sdk';
import { CoreToolExecutor } from './core-tool.executor';

const ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

function toolIdOf(config: Record<string, unknown>): string {
  return `mcp:${String(config.serverId)}.${String(config.tool)}`;
}

/**
 * `core.conformance.mcp-invoke {serverId, tool, arguments?}`: the node the conformance suite reserves
 * for "call a tool of the configured MCP server" (fixture `conformance-mcp-tool-roundtrip`). The host
 * maps it onto its own path: exactly a `core.tool` node calling `mcp:<serverId>.<tool>` (the
 * catalog, the run principal's authorization, pinned definitions, the session bracket, MRTR).
 */
@Injectable()
@NodeExecutor({ typeId: 'core.conformance.mcp-invoke', replayPolicy: 'non-deterministic' })
export class CoreConformanceMcpInvokeExecutor implements NodeExecutorProvider {
  constructor(private readonly tool: CoreToolExecutor) {}

  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    if (typeof config.serverId !== 'string' || !ID.test(config.serverId)) problems.push('core.conformance.mcp-invoke needs config.serverId, an MCP server id');
    if (typeof config.tool !== 'string' || !config.tool) problems.push('core.conformance.mcp-invoke needs config.tool, the MCP tool name');
    return [...problems, ...this.tool.validateConfig({ toolId: toolIdOf(config), arguments: config.arguments }).filter((p) => !p.includes('toolId'))];
  }

  replayPolicyOf(config: Record<string, unknown>, principal: NodeExecutionContext['principal']): Promise<ToolReplayPolicy> {
    return this.tool.replayPolicyOf({ toolId: toolIdOf(config) }, principal);
  }

  requiredScopesOf(config: Record<string, unknown>, scope: { tenant: string; workspace?: string }): Promise<{ scopes: string[]; childWorkflows: string[] }> {
    return this.tool.requiredScopesOf({ toolId: toolIdOf(config) }, scope);
  }

  execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    return this.tool.execute({ ...ctx, config: { toolId: toolIdOf(ctx.config), arguments: ctx.config.arguments ?? {} } });
  }
}
