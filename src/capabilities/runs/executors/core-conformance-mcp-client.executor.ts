import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider, NodeMcp } from '@openwop-host/plugin-sdk';

const METHODS = ['callTool', 'listTools', 'readResource', 'serverHealth'] as const;
type Method = (typeof METHODS)[number];

/**
 * `core.conformance.mcp-client`: the node of the conformance fixture `conformance-mcp-client` (RFC
 * 0204 §A, `v2-mcp-client-results`). It calls `ctx.mcp.<inputs.method>` with the run's inputs
 * `{method, serverId, name?, arguments?, cursor?, uri?}` and puts the resolved value, verbatim, at
 * `outputs.result`; a rejection fails the node with the rejection's code (`not_found` for a server the
 * tenant does not have). It is what a pack's node executor does with `ctx.mcp`, nothing more.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.conformance.mcp-client', replayPolicy: 'non-deterministic' })
export class CoreConformanceMcpClientExecutor implements NodeExecutorProvider {
  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const mcp: NodeMcp | undefined = ctx.mcp;
    if (!mcp) throw new NodeExecutionError('capability_not_provided', 'This host gives node executors no ctx.mcp.');
    const i = ctx.runInputs;
    const method = i.method;
    if (typeof method !== 'string' || !METHODS.includes(method as Method)) {
      throw new NodeExecutionError('invalid_arguments', `inputs.method must be one of ${METHODS.join(', ')}.`);
    }
    const serverId = i.serverId as string;
    let result: unknown;
    switch (method as Method) {
      case 'callTool':
        result = await mcp.callTool({
          serverId,
          name: i.name as string,
          ...(i.arguments !== undefined ? { arguments: i.arguments as Record<string, unknown> } : {}),
          ...(i.idempotencyKey !== undefined ? { idempotencyKey: i.idempotencyKey as string } : {}),
        });
        break;
      case 'listTools':
        result = await mcp.listTools({ serverId, ...(i.cursor !== undefined ? { cursor: i.cursor as string } : {}) });
        break;
      case 'readResource':
        result = await mcp.readResource({ serverId, uri: i.uri as string });
        break;
      case 'serverHealth':
        result = await mcp.serverHealth({ serverId });
        break;
    }
    return { outputs: { result } };
  }
}
