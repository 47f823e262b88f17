import type { Client } from '@modelcontextprotocol/client';
import { withTraceContext } from '../../../platform/tracing/trace-context';
import { SpanAttributes, startSpan, tracingEnabled } from '../../../platform/tracing/tracing';
import type { McpServerConfig } from '../tool-catalog.config';
import { mcpClientSdk } from './mcp-client-sdk';

/**
 * The host's MCP client calls projected onto the OpenTelemetry MCP semantic conventions (RFC 0207 §D,
 * observability.md §"MCP semantic-convention projection"): one CLIENT span per `tools/call` (and per
 * `tools/list` walk), named `{mcp.method.name} {target}`, a child of the current span (the tool
 * call's, under the node's), and current while the request is sent, so the server receives it as
 * its `traceparent`.
 *
 * Attributes are identifiers only: never the arguments or the result (`gen_ai.tool.call.arguments` /
 * `.result` are not emitted), and never `mcp.session.id` (the current revision has no session; a
 * legacy session id is not emitted either). Every span carries the mapping's version stamp.
 *
 * While tracing is off, nothing here does more than one check before running the call.
 */

/** The version of this host's mapping onto the upstream conventions (the projection's wire contract). */
export const MCP_MAPPING_VERSION = '0';
/** The upstream text this mapping follows: docs/gen-ai/mcp.md at this commit. */
export const MCP_SEMCONV_REF = 'open-telemetry/semantic-conventions-genai@1e01e830ef3c17b939ab7db8d25c7061e4239c0b';

/** Where a connection's requests go, as the conventions' network attributes. */
export interface McpEndpoint {
  /** `tcp` for Streamable HTTP, `pipe` for stdio. */
  transport: 'tcp' | 'pipe';
  address?: string;
  port?: number;
}

export function mcpEndpointOf(cfg: McpServerConfig): McpEndpoint {
  if (cfg.transport !== 'http') return { transport: 'pipe' };
  const u = new URL(cfg.url);
  const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  return { transport: 'tcp', address: u.hostname.replace(/^\[(.*)\]$/, '$1'), port };
}

/** What a span reads of the connection the request goes over. */
export interface McpSpanConnection {
  client: Client;
  revision: string;
  endpoint: McpEndpoint;
}

export type McpSpanMethod = 'tools/call' | 'tools/list';

/** The SDK's next request id (it numbers requests per client; see seedRequestIds in mcp-connect.ts). */
function nextRequestId(client: Client): number | undefined {
  const n = (client as unknown as { _requestMessageId?: unknown })._requestMessageId;
  return typeof n === 'number' ? n : undefined;
}

/** The attributes a span starts with: what is known before the request is sent. */
export function mcpSpanAttributes(conn: McpSpanConnection, method: McpSpanMethod, toolName: string | undefined): SpanAttributes {
  const e = conn.endpoint;
  return {
    'mcp.method.name': method,
    'mcp.protocol.version': conn.revision || undefined,
    ...(method === 'tools/call' ? { 'gen_ai.tool.name': toolName, 'gen_ai.operation.name': 'execute_tool' } : {}),
    'network.transport': e.transport,
    ...(e.transport === 'tcp' ? { 'network.protocol.name': 'http', 'server.address': e.address, 'server.port': e.port } : {}),
    'openwop.otel.mcp_mapping_version': MCP_MAPPING_VERSION,
    'openwop.otel.mcp_semconv_ref': MCP_SEMCONV_REF,
  };
}

/**
 * How a failed request is recorded: a JSON-RPC error (the SDK's ProtocolError) by its code, as
 * `error.type` and `rpc.response.status_code`; anything else (a timeout, a broken connection) by
 * the SDK's error code or the error's name.
 */
export function mcpErrorAttributes(e: unknown): { 'error.type': string; 'rpc.response.status_code'?: string } {
  const { ProtocolError, SdkError } = mcpClientSdk();
  if (e instanceof ProtocolError && typeof e.code === 'number') return { 'error.type': String(e.code), 'rpc.response.status_code': String(e.code) };
  if (e instanceof SdkError && typeof e.code === 'string') return { 'error.type': e.code };
  return { 'error.type': (e as Error)?.name || '_OTHER' };
}

/**
 * Runs one MCP request in its CLIENT span. `resultError` names the error type of a result that is a
 * failure without being a JSON-RPC error (`tool_error` for a CallToolResult with isError). The
 * JSON-RPC request id is recorded when exactly one request left this client while the span was open
 * (so it can only be this one), never guessed.
 */
export async function inMcpClientSpan<T>(conn: McpSpanConnection, method: McpSpanMethod, toolName: string | undefined, fn: () => Promise<T>, resultError?: (r: T) => string | undefined): Promise<T> {
  if (!tracingEnabled()) return fn();
  const span = startSpan(toolName && method === 'tools/call' ? `${method} ${toolName}` : method, { kind: 'client', attributes: mcpSpanAttributes(conn, method, toolName) });
  if (!span) return fn();
  const before = nextRequestId(conn.client);
  const requestId = (): SpanAttributes => {
    const after = nextRequestId(conn.client);
    return before !== undefined && after === before + 1 ? { 'jsonrpc.request.id': String(before) } : {};
  };
  try {
    const r = await withTraceContext(span.context, fn);
    const failed = resultError?.(r);
    span.setAttributes({ ...requestId(), ...(failed ? { 'error.type': failed } : {}) });
    if (failed) span.fail(failed);
    return r;
  } catch (e) {
    const err = mcpErrorAttributes(e);
    span.setAttributes({ ...requestId(), ...err });
    span.fail(err['error.type']);
    throw e;
  } finally {
    span.end();
  }
}
