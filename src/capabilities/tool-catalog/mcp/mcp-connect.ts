import { randomInt } from 'node:crypto';
import type { Client, ClientCapabilities, DiscoverResult, Transport } from '@modelcontextprotocol/client';
import { withTraceHeaders } from '../../../platform/tracing/tracing';
import type { McpServerConfig } from '../tool-catalog.config';
import { mcpClientSdk, mcpStdioTransport } from './mcp-client-sdk';
import { MCP_CURRENT_REVISION, MCP_LEGACY_REVISION, MCP_REVISIONS, McpMissingCapabilityError, McpRevisionError } from './mcp-revision';
import { inMcpClientSpan, McpEndpoint, mcpEndpointOf } from './mcp-semconv';
import type { McpWireTap } from './mcp-wire-tap';

export type McpEra = 'modern' | 'legacy';

/** What one negotiation with a server settled: kept so later connections skip the probe while it is fresh. */
export interface McpVerdict {
  era: McpEra;
  revision: string;
  /** The server's `server/discover` answer (modern era only). */
  discover?: DiscoverResult;
}

export interface McpConnectOptions {
  signal: AbortSignal;
  timeoutMs: number;
  /** The revision asked for (default: the current one). One the host does not speak is refused before any call. */
  requestVersion?: string;
  /** The capabilities declared on every request: only those the caller honours. */
  capabilities?: ClientCapabilities;
  /** False for an exchange made without credentials: it never lands below the current revision. */
  authenticated?: boolean;
  /** A still-fresh verdict of this server: connect without probing. */
  prior?: McpVerdict;
  /** Keeps the server's answers as they came on the wire (`ctx.mcp` answers them unaltered). */
  tap?: McpWireTap;
}

/** A connected client and the revision every one of its requests carries. */
export interface McpConnection {
  client: Client;
  requested: string;
  revision: string;
  era: McpEra;
  /** The current revision was asked for and the legacy one was selected (explicitly, and recorded as such). */
  downgraded: boolean;
  /** Whether this connection probed the server (false when it reused a verdict). */
  negotiated: boolean;
  verdict: McpVerdict;
  /** Where its requests go (the network attributes of its spans). */
  endpoint: McpEndpoint;
  close(): Promise<void>;
}

const CLIENT_INFO = { name: 'openwop-host', version: '1' };
/** `MissingRequiredClientCapabilityError` (2026-07-28): the request lacked a client capability the server needs. */
const MISSING_CAPABILITY = -32021;

/** Why a downgrade is not allowed for this exchange, if it is not. */
function downgradeBar(cfg: McpServerConfig, o: McpConnectOptions): 'version-downgrade-forbidden' | 'unauthenticated' | undefined {
  if (cfg.downgrade === 'forbid') return 'version-downgrade-forbidden';
  if (o.authenticated === false) return 'unauthenticated';
  return undefined;
}

function transportOf(cfg: McpServerConfig, tap?: McpWireTap): Transport {
  if (cfg.transport === 'stdio') {
    const StdioClientTransport = mcpStdioTransport();
    const stdio = new StdioClientTransport({ command: cfg.command, args: cfg.args, env: cfg.env, cwd: cfg.cwd, stderr: 'pipe' });
    // Drain the server's stderr so a chatty server cannot block on a full pipe; it is not logged
    // because servers print whatever they like there, credentials included.
    stdio.stderr?.on('data', () => undefined);
    return tap ? tap.watch(stdio, { deliveries: true }) : stdio;
  }
  // Each request carries the trace context current when it is sent (the tool call's span).
  const send = (url: string | URL, init?: RequestInit) => fetch(url, withTraceHeaders(init));
  const http = new (mcpClientSdk().StreamableHTTPClientTransport)(new URL(cfg.url), { requestInit: { headers: cfg.headers ?? {} }, fetch: tap ? tap.fetch(send) : send });
  return tap ? tap.watch(http, { deliveries: false }) : http;
}

/**
 * Request ids start at a random point per client: a call retried by another client (an MRTR retry
 * after the run resumed, possibly on another replica) then never repeats the first call's id. The SDK
 * numbers requests from 0 per client and has no option for it; the field is checked before use.
 */
function seedRequestIds(client: Client): void {
  const c = client as unknown as { _requestMessageId?: unknown };
  if (typeof c._requestMessageId === 'number') c._requestMessageId = randomInt(1, 2 ** 31);
}

/**
 * Connects to a configured MCP server at the current revision (stateless, `server/discover`,
 * `_meta` and `MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name` on every request, all set by the
 * official client). A server that does not speak it is reached through the 2025-06-18
 * `initialize` handshake only when the downgrade is allowed (per server `downgrade`, and never for an
 * unauthenticated exchange); the connection then says `downgraded` and every request carries the
 * legacy revision. A revision neither side shares is `interop_version_unsupported`, never a silent
 * fallback.
 */
export async function connectMcp(cfg: McpServerConfig, o: McpConnectOptions): Promise<McpConnection> {
  const requested = o.requestVersion ?? MCP_CURRENT_REVISION;
  if (!MCP_REVISIONS.includes(requested)) throw new McpRevisionError(requested, 'unsupported', `The host does not speak MCP revision ${requested}.`);
  const bar = requested === MCP_CURRENT_REVISION ? downgradeBar(cfg, o) : undefined;
  const legacyOnly = requested === MCP_LEGACY_REVISION;
  const client = new (mcpClientSdk().Client)(CLIENT_INFO, {
    capabilities: o.capabilities ?? {},
    supportedProtocolVersions: legacyOnly ? [MCP_LEGACY_REVISION] : [...MCP_REVISIONS],
    // Pinned when a downgrade is barred (no fallback at all); else probe and fall back openly.
    versionNegotiation: { mode: legacyOnly ? 'legacy' : bar ? { pin: MCP_CURRENT_REVISION } : 'auto' },
    // MRTR is the host's: an input_required result comes back to the caller, which suspends or answers it.
    inputRequired: { autoFulfill: false },
    listMaxPages: 200,
  });
  seedRequestIds(client);
  const prior = o.prior && !legacyOnly && !(bar && o.prior.era === 'legacy') ? o.prior : undefined;
  try {
    await client.connect(transportOf(cfg, o.tap), {
      signal: o.signal,
      timeout: o.timeoutMs,
      ...(prior ? { prior: prior.era === 'modern' && prior.discover ? { kind: 'modern', discover: prior.discover } : { kind: 'legacy' } } : {}),
    });
  } catch (e) {
    await client.close().catch(() => undefined);
    throw revisionFailure(e, requested, bar) ?? e;
  }
  const revision = client.getNegotiatedProtocolVersion() ?? '';
  const era: McpEra = client.getProtocolEra() === 'modern' ? 'modern' : 'legacy';
  if (!MCP_REVISIONS.includes(revision) || (legacyOnly && era === 'modern')) {
    await client.close().catch(() => undefined);
    throw new McpRevisionError(requested, 'unsupported', `The MCP server settled on revision ${revision || 'unknown'}, which the host does not speak.`);
  }
  const discover = era === 'modern' ? client.getDiscoverResult() : undefined;
  return {
    client,
    requested,
    revision,
    era,
    downgraded: requested === MCP_CURRENT_REVISION && revision !== MCP_CURRENT_REVISION,
    negotiated: !prior,
    verdict: { era, revision, ...(discover ? { discover } : {}) },
    endpoint: mcpEndpointOf(cfg),
    close: () => client.close().catch(() => undefined),
  };
}

/** A failure of the connection itself: fetch's TypeError, or a socket error (ECONNREFUSED, ENOTFOUND...). */
function isTransportFailure(cause: unknown): boolean {
  // By name: fetch's errors come from another realm than this module's globals under some loaders.
  for (let c = cause as { name?: unknown; code?: unknown; cause?: unknown } | undefined, depth = 0; c && depth < 4; c = c.cause as typeof c, depth++) {
    if (c.name === 'TypeError' || (typeof c.code === 'string' && /^E[A-Z]+$/.test(c.code))) return true;
  }
  return false;
}

/** The boundary error of a failed connect that was about revisions, or undefined for any other failure. */
function revisionFailure(e: unknown, requested: string, bar: 'version-downgrade-forbidden' | 'unauthenticated' | undefined): McpRevisionError | undefined {
  const { SdkError, SdkErrorCode, UnsupportedProtocolVersionError } = mcpClientSdk();
  if (e instanceof SdkError && e.code === SdkErrorCode.EraNegotiationFailed) {
    // The probe never reached the server (refused, reset, unresolvable): a transport failure, not a revision one.
    if (isTransportFailure(e.cause ?? (e.data as { cause?: unknown } | undefined)?.cause)) return undefined;
    if (bar === 'version-downgrade-forbidden') return new McpRevisionError(requested, bar, `The MCP server does not speak ${requested}, and this server's policy forbids the downgrade.`);
    if (bar === 'unauthenticated') return new McpRevisionError(requested, bar, `The MCP server does not speak ${requested}, and an unauthenticated exchange is never downgraded.`);
    return new McpRevisionError(requested, 'unsupported', `The MCP server does not offer revision ${requested}.`);
  }
  if (e instanceof UnsupportedProtocolVersionError) return new McpRevisionError(requested, bar ?? 'unsupported', `The MCP server refused revision ${requested}.`);
  // The legacy handshake answered with a revision the client does not accept.
  if (e instanceof Error && /protocol version is not supported/i.test(e.message)) return new McpRevisionError(requested, 'unsupported', 'The MCP server answered the handshake with a revision the host does not speak.');
  return undefined;
}

/** One page set of `tools/list` with the server's cache hints (absent on the legacy revision). */
export interface McpToolList {
  tools: Array<Record<string, unknown>>;
  ttlMs?: number;
  cacheScope?: 'public' | 'private';
}

/**
 * Every page of `tools/list` (the client follows `nextCursor`; a cursor loop or more than 200 pages
 * fails), in one `tools/list` client span (./mcp-semconv.ts).
 */
export async function listAllTools(conn: McpConnection, signal: AbortSignal, timeoutMs: number): Promise<McpToolList> {
  const res = (await inMcpClientSpan(conn, 'tools/list', undefined, () => conn.client.listTools(undefined, { signal, timeout: timeoutMs, cacheMode: 'bypass' }))) as unknown as Record<string, unknown>;
  const ttl = res.ttlMs;
  const scope = res.cacheScope;
  return {
    tools: Array.isArray(res.tools) ? (res.tools as Array<Record<string, unknown>>) : [],
    ...(typeof ttl === 'number' && Number.isFinite(ttl) && ttl >= 0 ? { ttlMs: ttl } : {}),
    ...(scope === 'public' || scope === 'private' ? { cacheScope: scope } : {}),
  };
}

/** One elicitation (or other) request a tool embedded in an `input_required` result, by key. */
export interface McpInputRequest {
  method: string;
  params?: Record<string, unknown>;
}

/** What one `tools/call` round answered. */
export type McpCallRound =
  | { resultType: 'complete'; result: Record<string, unknown> }
  | { resultType: 'input_required'; inputRequests: Record<string, McpInputRequest>; requestState?: string };

/** The MRTR parts of a retry: the answers by key and the server's state, echoed byte for byte. */
export interface McpRetry {
  inputResponses: Record<string, unknown>;
  requestState?: string;
}

/**
 * One `tools/call` round. An `input_required` answer is handed back (never fulfilled here); a retry
 * carries `inputResponses` and the `requestState` exactly as the server sent it, on a new request id.
 * Each round is one `tools/call <name>` client span (./mcp-semconv.ts); a result with `isError` marks
 * it `tool_error`.
 */
export async function callToolRound(conn: McpConnection, name: string, args: Record<string, unknown>, retry: McpRetry | undefined, signal: AbortSignal, timeoutMs: number): Promise<McpCallRound> {
  const params: Record<string, unknown> = { name, arguments: args };
  if (retry) {
    params.inputResponses = retry.inputResponses;
    if (retry.requestState !== undefined) params.requestState = retry.requestState;
  }
  let res: Record<string, unknown>;
  try {
    res = await inMcpClientSpan(
      conn,
      'tools/call',
      name,
      async () => (await conn.client.callTool(params as { name: string; arguments: Record<string, unknown> }, { signal, timeout: timeoutMs, allowInputRequired: true })) as unknown as Record<string, unknown>,
      (r) => (r.isError === true ? 'tool_error' : undefined),
    );
  } catch (e) {
    if (e instanceof mcpClientSdk().MissingRequiredClientCapabilityError || (e as { code?: unknown })?.code === MISSING_CAPABILITY) {
      const data = (e as { data?: { requiredCapabilities?: unknown } }).data;
      throw new McpMissingCapabilityError(Array.isArray(data?.requiredCapabilities) ? data.requiredCapabilities.map(String) : []);
    }
    throw e;
  }
  if (res.resultType === 'input_required') {
    const requests: Record<string, McpInputRequest> = {};
    const raw = res.inputRequests && typeof res.inputRequests === 'object' ? (res.inputRequests as Record<string, unknown>) : {};
    for (const [key, r] of Object.entries(raw)) {
      const req = (r ?? {}) as { method?: unknown; params?: unknown };
      requests[key] = { method: String(req.method ?? ''), ...(req.params && typeof req.params === 'object' ? { params: req.params as Record<string, unknown> } : {}) };
    }
    return { resultType: 'input_required', inputRequests: requests, ...(typeof res.requestState === 'string' ? { requestState: res.requestState } : {}) };
  }
  return { resultType: 'complete', result: res };
}
