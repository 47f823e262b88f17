import type { ToolCallResult, ToolSession } from '@openwop-host/plugin-sdk';
import { DomainError } from '../../../platform/errors/domain-error';
import { callToolRound, McpCallRound, McpConnection, McpRetry } from './mcp-connect';

/** What the run engine needs of an MCP session beyond `ToolSession`: one round at a time, and the revision. */
export interface McpRoundSession extends ToolSession {
  readonly mcp: { serverId: string; toolName: string; protocolVersion: string };
  /** One `tools/call` round: the first without `retry`, a retry with the answers and the echoed state. */
  round(args: Record<string, unknown>, retry: McpRetry | undefined, signal: AbortSignal): Promise<McpCallRound>;
}

export function isMcpRoundSession(s: ToolSession | undefined): s is McpRoundSession {
  return !!s && typeof (s as Partial<McpRoundSession>).round === 'function' && !!(s as Partial<McpRoundSession>).mcp;
}

/** The tool result of a completed round, as a `ToolCallResult` (an `isError` result is a tool error, not a throw). */
export function completedCall(result: Record<string, unknown>): ToolCallResult {
  if (result.isError === true) return { status: 'error', content: result.content, error: { code: 'tool_error', message: 'The MCP tool reported an error.' } };
  return { status: 'ok', content: result.structuredContent ?? result.content };
}

/** A failed round as a `ToolCallResult`: the boundary code of a domain error, else `tool_call_failed`. */
export function failedCall(e: unknown): ToolCallResult {
  if (e instanceof DomainError) return { status: 'error', error: { code: e.code, message: e.message } };
  return { status: 'error', error: { code: 'tool_call_failed', message: (e as Error)?.message ?? String(e) } };
}

/** An MCP tool session on one connection. `call` answers an `input_required` result as an error (no one to ask). */
export class McpToolSession implements McpRoundSession {
  readonly mcp: { serverId: string; toolName: string; protocolVersion: string };

  constructor(
    serverId: string,
    toolName: string,
    private readonly conn: McpConnection,
    private readonly timeoutMs: number,
  ) {
    this.mcp = { serverId, toolName, protocolVersion: conn.revision };
  }

  round(args: Record<string, unknown>, retry: McpRetry | undefined, signal: AbortSignal): Promise<McpCallRound> {
    return callToolRound(this.conn, this.mcp.toolName, args, retry, signal, this.timeoutMs);
  }

  async call(args: Record<string, unknown>, signal: AbortSignal): Promise<ToolCallResult> {
    try {
      const r = await this.round(args, undefined, signal);
      if (r.resultType === 'input_required') return { status: 'error', error: { code: 'mcp_input_required', message: 'The MCP tool asked for input this caller cannot give.' } };
      return completedCall(r.result);
    } catch (e) {
      return failedCall(e);
    }
  }

  close(): Promise<void> {
    return this.conn.close();
  }
}
