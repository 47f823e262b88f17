/**
 * `ctx.mcp` (since 1.8; RFC 0204 §A): the MCP servers the host's operator configured
 * (`tools.mcpServers[]`), reachable from node executors by their `serverId`. Every method resolves
 * to the server's own MCP result as it came on the wire (no re-wrapping; `_meta`, `resultType` and
 * any field the host does not know are kept). The only rejections:
 *
 * - an unknown `serverId` (not configured for the run's tenant): a `NodeExecutionError` with code
 *   `not_found` and `details.service` `mcp`;
 * - an MCP error response: a `NodeMcpError` (code `mcp_error`) whose `error` is the JSON-RPC
 *   `Error { code, message, data? }` exactly as the server sent it;
 * - a transport failure (the server could not be reached, answered no MCP, or timed out): code
 *   `mcp_unreachable`.
 *
 * Left uncaught, each fails the node with its code. `callTool` may also fail with the host's own
 * refusals of a tool call: `tool_dispatch_denied` / `approval_denied` (the tenant's governed dispatch
 * policy), `mcp_tool_held` (the tool's definition changed since the tenant approved it),
 * `mcp_input_unsupported` / `mcp_mrtr_rounds_exceeded` (input the step cannot ask for).
 */

/** A JSON-RPC error object as an MCP server answered it. */
export interface McpJsonRpcError {
  code: number;
  message: string;
  data?: unknown;
}

/** An MCP `CallToolResult` as the server sent it (fields beyond these are kept as they came). */
export interface McpCallToolResult {
  content?: Array<Record<string, unknown>>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
  [field: string]: unknown;
}

/** One `tools/list` page as the server sent it. */
export interface McpListToolsResult {
  tools: Array<Record<string, unknown>>;
  nextCursor?: string;
  ttlMs?: number;
  cacheScope?: 'public' | 'private';
  _meta?: Record<string, unknown>;
  [field: string]: unknown;
}

/** A `resources/read` result as the server sent it. */
export interface McpReadResourceResult {
  contents: Array<Record<string, unknown>>;
  _meta?: Record<string, unknown>;
  [field: string]: unknown;
}

/**
 * Whether the host can talk to a server now, from a `server/discover` probe at most its `ttlMs` old:
 * `reachable` (it answered and offers a revision the host speaks, or the host reaches it through the
 * allowed 2025-06-18 handshake), `incompatible` (it answered, without a revision the host speaks),
 * `unreachable` (a transport failure). `discover` is the `DiscoverResult` it answered, unaltered.
 */
export interface McpServerHealth {
  state: 'reachable' | 'unreachable' | 'incompatible';
  discover?: Record<string, unknown>;
}

export interface McpCallToolRequest {
  serverId: string;
  name: string;
  arguments?: Record<string, unknown>;
  /**
   * A key of the pack's own that names this logical call: it is part of the call's effect identity,
   * so a node executed again never repeats a call it already made (the recorded result is answered).
   */
  idempotencyKey?: string;
}

/** `NodeExecutionContext.mcp`. */
export interface NodeMcp {
  /**
   * `tools/call`: the server's `CallToolResult` unaltered. `isError: true` resolves (a tool error is
   * a result). The call is one of the node's effects (`ctx.effect`): a node executed again, or a
   * replay, never calls twice. When the tool asks for input (MCP `input_required`), the host asks it
   * as the node's clarification interrupt (one per node execution) and retries with the answer;
   * it never resolves an `InputRequiredResult`.
   */
  callTool(request: McpCallToolRequest): Promise<McpCallToolResult>;
  /** `tools/list`: ONE page (the first, or the one `cursor` names), unaltered; pages are never merged. */
  listTools(request: { serverId: string; cursor?: string }): Promise<McpListToolsResult>;
  /** `resources/read`: the server's `ReadResourceResult` unaltered. */
  readResource(request: { serverId: string; uri: string }): Promise<McpReadResourceResult>;
  /** Reachability from `server/discover`; resolves `unreachable` rather than rejecting on a transport failure. */
  serverHealth(request: { serverId: string }): Promise<McpServerHealth>;
}
