/**
 * The MCP mount's wire rules (RFC 0153 §B, `mcp-integration.md` §4.2), as pure functions: the
 * JSON-RPC envelope, header/body agreement (-32020) before version selection (-32022), the era a
 * request is served under, and the shapes of answers. No I/O here: the service decides what a
 * method does, this file decides whether and how a request is read.
 */

export const MCP_CURRENT = '2026-07-28';
export const MCP_LEGACY = '2025-06-18';
/** The revisions the v1 (dual-era) mount serves: the list `server/discover` answers and discovery advertises. */
export const MOUNT_REVISIONS: readonly string[] = [MCP_CURRENT, MCP_LEGACY];
/** The revisions the v2 (current-only) mount serves: v2 lists no legacy revision. */
export const V2_MOUNT_REVISIONS: readonly string[] = [MCP_CURRENT];

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

export const RPC = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  HEADER_MISMATCH: -32020,
  MISSING_CLIENT_CAPABILITY: -32021,
  UNSUPPORTED_PROTOCOL_VERSION: -32022,
} as const;

export type RpcId = string | number;
export type Era = 'modern' | 'legacy';

/** A JSON-RPC request (or notification) the mount accepted for dispatch. */
export interface McpRequest {
  /** Absent: a notification (answered 202, nothing dispatched but the acknowledgement). */
  id?: RpcId;
  method: string;
  params: Record<string, unknown>;
  revision: string;
  era: Era;
  clientCapabilities: Record<string, unknown>;
  /** Which mount it came to: the v1 dual-era one, or the v2 current-only one (ids it answers are tenant-bound). */
  mount?: 'v1' | 'v2';
  /** The origin the request reached the host at (its Host header), for links to the host's own pages. */
  origin?: string;
}

/** A refusal before dispatch: an HTTP status and a JSON-RPC error. */
export interface McpRefusal {
  status: number;
  body: RpcErrorBody;
}

export interface RpcErrorBody {
  jsonrpc: '2.0';
  id: RpcId | null;
  error: { code: number; message: string; data?: unknown };
}

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
    /** The HTTP status of the answer (200 unless the wire rules say otherwise). */
    readonly status = 200,
  ) {
    super(message);
  }
}

export function errorBody(id: RpcId | null, code: number, message: string, data?: unknown): RpcErrorBody {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The one header value of a name (Fastify lowercases them; a repeated header is refused as a mismatch). */
export type HeaderBag = Record<string, string | string[] | undefined>;
function header(headers: HeaderBag, name: string): string | undefined | null {
  const v = headers[name.toLowerCase()];
  if (Array.isArray(v)) return null;
  return v === undefined ? undefined : v.trim();
}

const BASE64_SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;
const BASE64_CANONICAL = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** An `Mcp-Name` value: plain, or `=?base64?…?=` (UTF-8); undefined for a broken sentinel. */
export function decodeMcpName(v: string): string | undefined {
  const m = BASE64_SENTINEL.exec(v);
  if (!m) return v;
  if (!BASE64_CANONICAL.test(m[1])) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(m[1], 'base64'));
  } catch {
    return undefined;
  }
}

/** The methods whose `params.name` / `params.uri` / `params.taskId` the `Mcp-Name` header mirrors. */
const NAMED: Record<string, 'name' | 'uri' | 'taskId'> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri', 'tasks/get': 'taskId', 'tasks/update': 'taskId', 'tasks/cancel': 'taskId' };

/**
 * Reads one POSTed body under the mount's rules, in the order the spec fixes: envelope, then
 * header/body agreement (-32020), then the revision (-32022). A header-less request is served as
 * 2025-06-18 (legacy semantics on this dual-era mount); a `2026-07-28` request must carry the
 * revision in `_meta` and the `Mcp-Method` (and, on a named method, `Mcp-Name`) header.
 */
export function readRequest(body: unknown, headers: HeaderBag, supported: readonly string[] = MOUNT_REVISIONS, opts: { legacy?: boolean } = {}): McpRequest | McpRefusal {
  if (Array.isArray(body)) return { status: 400, body: errorBody(null, RPC.INVALID_REQUEST, 'JSON-RPC batches are not served by this mount; send one request per POST.') };
  if (!isObject(body)) return { status: 400, body: errorBody(null, RPC.INVALID_REQUEST, 'The body must be a JSON-RPC 2.0 request object.') };
  const rawId = body.id;
  const idOk = rawId === undefined || typeof rawId === 'string' || (typeof rawId === 'number' && Number.isFinite(rawId));
  const id = idOk ? (rawId as RpcId | undefined) : undefined;
  if (body.jsonrpc !== '2.0' || typeof body.method !== 'string' || !body.method || body.method.length > 128 || !idOk) {
    return { status: 400, body: errorBody(id ?? null, RPC.INVALID_REQUEST, 'Not a JSON-RPC 2.0 request: it needs "jsonrpc": "2.0", a method name and a string or number id.') };
  }
  if (body.params !== undefined && !isObject(body.params)) {
    return { status: 400, body: errorBody(id ?? null, RPC.INVALID_REQUEST, 'params must be an object.') };
  }
  const method = body.method;
  const params = (body.params ?? {}) as Record<string, unknown>;
  const meta = isObject(params._meta) ? params._meta : {};
  const bodyRevision = meta[META_PROTOCOL_VERSION];
  const mismatch = (message: string, data: Record<string, unknown>): McpRefusal => ({ status: 400, body: errorBody(id ?? null, RPC.HEADER_MISMATCH, message, data) });

  const versionHeader = header(headers, 'mcp-protocol-version');
  const methodHeader = header(headers, 'mcp-method');
  const nameHeader = header(headers, 'mcp-name');
  if (versionHeader === null || methodHeader === null || nameHeader === null) return mismatch('An MCP header is repeated.', { header: 'repeated' });
  if (bodyRevision !== undefined && typeof bodyRevision !== 'string') return mismatch('_meta protocolVersion must be a string.', { body: bodyRevision });

  if (versionHeader === undefined) {
    // Header-less: the legacy era. A body that claims a revision it did not put in the header disagrees with it.
    if (bodyRevision !== undefined) return mismatch(`The body names protocol version ${bodyRevision} but the MCP-Protocol-Version header is absent.`, { header: null, body: bodyRevision });
    if (methodHeader !== undefined && methodHeader !== method) return mismatch(`Mcp-Method "${methodHeader}" disagrees with the body's method "${method}".`, { header: methodHeader, body: method });
    // A current-only mount serves no header-less request: that is revision 2025-03-26 at most.
    if (opts.legacy === false) {
      return { status: 400, body: errorBody(id ?? null, RPC.UNSUPPORTED_PROTOCOL_VERSION, 'A request without MCP-Protocol-Version is MCP 2025-03-26 at most, which this server does not serve.', { supported: [...supported], requested: '2025-03-26' }) };
    }
    return { id, method, params, revision: MCP_LEGACY, era: 'legacy', clientCapabilities: {} };
  }

  // Agreement first (mcp-header-body-consistent), then selection.
  if (bodyRevision !== undefined && bodyRevision !== versionHeader) {
    return mismatch(`MCP-Protocol-Version ${versionHeader} disagrees with the body's _meta protocol version ${bodyRevision}.`, { header: versionHeader, body: bodyRevision });
  }
  const modern = versionHeader >= MCP_CURRENT;
  if (methodHeader !== undefined && methodHeader !== method) return mismatch(`Mcp-Method "${methodHeader}" disagrees with the body's method "${method}".`, { header: methodHeader, body: method });
  const field = NAMED[method];
  const named = field ? params[field] : undefined;
  if (nameHeader !== undefined && field) {
    const decoded = decodeMcpName(nameHeader);
    if (decoded === undefined) return mismatch('Mcp-Name carries an invalid Base64 sentinel.', { header: nameHeader });
    if (typeof named === 'string' && decoded !== named) return mismatch(`Mcp-Name "${decoded}" disagrees with the body's params.${field} "${named}".`, { header: decoded, body: named });
  }
  if (modern && id !== undefined) {
    if (bodyRevision === undefined) return mismatch(`A ${versionHeader} request carries its revision in _meta["${META_PROTOCOL_VERSION}"] too; it is missing.`, { header: versionHeader, body: null });
    if (methodHeader === undefined) return mismatch('A 2026-07-28 request carries the Mcp-Method header; it is missing.', { header: null, body: method });
    if (field && typeof named === 'string' && nameHeader === undefined) return mismatch(`A 2026-07-28 ${method} carries the Mcp-Name header; it is missing.`, { header: null, body: named });
  }

  if (!supported.includes(versionHeader)) {
    return {
      status: 400,
      body: errorBody(id ?? null, RPC.UNSUPPORTED_PROTOCOL_VERSION, `MCP protocol version ${versionHeader} is not supported by this server.`, { supported: [...supported], requested: versionHeader }),
    };
  }
  const era: Era = versionHeader === MCP_CURRENT ? 'modern' : 'legacy';
  const caps = era === 'modern' && isObject(meta[META_CLIENT_CAPABILITIES]) ? (meta[META_CLIENT_CAPABILITIES] as Record<string, unknown>) : {};
  return { id, method, params, revision: versionHeader, era, clientCapabilities: caps };
}

export function isRefusal(r: McpRequest | McpRefusal): r is McpRefusal {
  return (r as McpRefusal).status !== undefined;
}

/** The JSON-RPC success body; a modern result carries `resultType` and the server's info. */
export function resultBody(req: McpRequest, result: Record<string, unknown>, serverInfo: { name: string; version: string }): Record<string, unknown> {
  if (req.era === 'legacy') return { jsonrpc: '2.0', id: req.id ?? null, result };
  const meta = isObject(result._meta) ? result._meta : {};
  return {
    jsonrpc: '2.0',
    id: req.id ?? null,
    result: { resultType: 'complete', ...result, _meta: { ...meta, [META_SERVER_INFO]: serverInfo } },
  };
}

/** HTTP status of a JSON-RPC error under the current revision (method-not-found is 404 there; legacy answers 200). */
export function statusOf(req: Pick<McpRequest, 'era'>, e: RpcError): number {
  if (e.status !== 200) return e.status;
  if (req.era === 'modern' && e.code === RPC.METHOD_NOT_FOUND) return 404;
  if (e.code === RPC.MISSING_CLIENT_CAPABILITY) return 400;
  return 200;
}

/** The methods each era serves (everything else is -32601). */
export const MODERN_METHODS = new Set(['server/discover', 'tools/list', 'tools/call', 'resources/list', 'resources/templates/list', 'resources/read', 'prompts/list', 'prompts/get']);
export const LEGACY_METHODS = new Set(['initialize', 'ping', 'logging/setLevel', 'tools/list', 'tools/call', 'resources/list', 'resources/templates/list', 'resources/read', 'prompts/list', 'prompts/get', 'elicitation/create', 'sampling/createMessage']);

/** A deterministic page of a sorted list: the cursor is the last key of the previous page, opaque to the client. */
export function pageOf<T>(items: T[], keyOf: (t: T) => string, cursor: unknown, size: number): { page: T[]; nextCursor?: string } {
  let start = 0;
  if (cursor !== undefined) {
    if (typeof cursor !== 'string' || !/^[A-Za-z0-9_-]{1,700}$/.test(cursor)) throw new RpcError(RPC.INVALID_PARAMS, 'Invalid cursor.');
    const after = Buffer.from(cursor, 'base64url').toString('utf8');
    if (!after.startsWith('k:')) throw new RpcError(RPC.INVALID_PARAMS, 'Invalid cursor.');
    const key = after.slice(2);
    start = items.findIndex((t) => keyOf(t) > key);
    if (start < 0) start = items.length;
  }
  const page = items.slice(start, start + size);
  const more = start + size < items.length;
  return { page, ...(more ? { nextCursor: Buffer.from(`k:${keyOf(page[page.length - 1])}`, 'utf8').toString('base64url') } : {}) };
}
