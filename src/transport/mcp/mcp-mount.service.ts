import { Injectable, Logger } from '@nestjs/common';
import { HOST_NAME, HOST_VERSION } from '../../platform/discovery/discovery.service';
import type { Principal } from '../../platform/identity/principal';
import { CallIo, McpCalls } from './mcp-calls';
import { ExposedTool, McpExposure } from './mcp-exposure';
import { McpSampling } from './mcp-sampling';
import { requestOrigin } from './mcp-url-mode';
import { McpLegacySessions } from './mcp-legacy-session';
import { declaresTasks, McpTasks, TASK_METHODS, TASKS_EXTENSION } from './mcp-tasks';
import { McpTaskSubscriptions } from './mcp-tasks-listen';
import type { RunState } from './mcp-run-projection';
import { errorBody, HeaderBag, isRefusal, LEGACY_METHODS, MCP_LEGACY, McpRequest, MODERN_METHODS, MOUNT_REVISIONS, pageOf, readRequest, resultBody, RPC, RpcError, statusOf, V2_MOUNT_REVISIONS } from './mcp-wire';

/** The methods the v2 mount serves beyond the current revision's own: the Tasks extension and its notifications. */
const V2_METHODS: ReadonlySet<string> = new Set([...TASK_METHODS, 'subscriptions/listen']);

/** Items per page of the mount's lists. */
const PAGE = 100;
/** How long a caller may reuse a list (its content depends on the caller: `cacheScope: private`). */
const LIST_TTL_MS = 30_000;
/** How long `server/discover` may be reused (the same for every caller: `public`). */
const DISCOVER_TTL_MS = 300_000;
const LOG_LEVELS = new Set(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']);

const INSTRUCTIONS = 'An OpenWOP host. Its tools are the governed tools of your catalog and the workflows your tenant exposes; every call runs as a durable, audited run. A call that needs an approval or an answer returns input_required (revision 2026-07-28).';

export interface MountAnswer {
  status: number;
  /** Undefined: an accepted notification (202, no body). */
  body?: unknown;
  /** Response headers (the legacy `Mcp-Session-Id` of an `initialize`). */
  headers?: Record<string, string>;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A JSON-RPC response a client POSTs (to a request the mount sent it): an id, a result or an error, no method. */
function isResponse(body: unknown): body is Record<string, unknown> {
  return isObject(body) && body.jsonrpc === '2.0' && body.method === undefined && body.id !== undefined && (body.result !== undefined || body.error !== undefined);
}

function toolOnWire(t: ExposedTool): Record<string, unknown> {
  return {
    name: t.name,
    ...(t.title ? { title: t.title } : {}),
    ...(t.description ? { description: t.description } : {}),
    inputSchema: t.inputSchema,
    ...(t.outputSchema ? { outputSchema: t.outputSchema } : {}),
    _meta: t.toolId ? { 'io.openwop/toolId': t.toolId, ...(t.safetyTier ? { 'io.openwop/safetyTier': t.safetyTier } : {}) } : { 'io.openwop/workflowId': t.workflowId },
  };
}

/**
 * The host's MCP server (RFC 0020 + RFC 0153): one POSTed JSON-RPC request at a time, read by the
 * wire rules (agreement, then revision), then served under its era. 2026-07-28 is stateless
 * (`server/discover`, no `initialize`, `resultType` and cache hints on results); 2025-06-18 is the
 * legacy profile (`initialize`, `ping`, `logging/setLevel`, the elicitation and sampling bridges), served without
 * a session: every request stands alone on both eras. The caller is already authenticated; what
 * each method shows or runs is decided for that principal.
 */
@Injectable()
export class McpMountService {
  private readonly logger = new Logger('mcp-mount');

  constructor(
    private readonly exposure: McpExposure,
    private readonly calls: McpCalls,
    private readonly sampling: McpSampling,
    private readonly sessions: McpLegacySessions,
    private readonly tasks: McpTasks,
    private readonly subscriptions: McpTaskSubscriptions,
  ) {}

  /**
   * Answers one POSTed request. `notify`, when given, receives the notifications the request's own
   * stream may carry before its answer: `notifications/progress` of a `tools/call` that asked for
   * them (`_meta.progressToken`), one per step its run completes.
   */
  async handle(principal: Principal, body: unknown, headers: HeaderBag, notify?: (message: Record<string, unknown>) => void, mount: 'v1' | 'v2' = 'v1', io: Omit<CallIo, 'task'> = {}): Promise<MountAnswer> {
    // The answer to an out-of-band elicitation/create this (dual-era) mount sent a legacy client.
    if (mount === 'v1' && isResponse(body)) {
      const refused = await this.calls.answerOutOfBand(principal, body);
      return refused ? { status: refused.status, body: errorBody(null, refused.code, refused.message, refused.data) } : { status: 202 };
    }
    const supported = mount === 'v2' ? V2_MOUNT_REVISIONS : MOUNT_REVISIONS;
    const req = readRequest(body, headers, supported, { legacy: mount === 'v1' });
    if (isRefusal(req)) return { status: req.status, body: req.body };
    req.mount = mount;
    req.origin = requestOrigin(headers);
    // A legacy request states no capabilities; its session id (issued at initialize) carries them.
    if (req.era === 'legacy') req.clientCapabilities = { ...req.clientCapabilities, ...(await this.sessions.capabilities(principal, headers)) };
    // A notification (or a client's response) is acknowledged; nothing the host serves acts on one.
    if (req.id === undefined) return { status: 202 };
    try {
      const served = req.era === 'modern' ? MODERN_METHODS : LEGACY_METHODS;
      // The Tasks extension and subscriptions/listen are served on the v2 mount only (RFC 0198).
      if (!served.has(req.method) && !(req.mount === 'v2' && V2_METHODS.has(req.method))) {
        throw new RpcError(RPC.METHOD_NOT_FOUND, req.era === 'modern' && LEGACY_METHODS.has(req.method) ? `${req.method} does not exist in MCP ${req.revision}.` : `Method not found: ${req.method}`);
      }
      const result = await this.dispatch(principal, req, notify, io);
      if (result.resultType === 'input_required') return { status: 200, body: { jsonrpc: '2.0', id: req.id, result } };
      if (req.method === 'initialize') {
        const session = await this.sessions.issue(principal, req.params.capabilities);
        return { status: 200, body: resultBody(req, result, { name: HOST_NAME, version: HOST_VERSION }), ...(session ? { headers: { 'mcp-session-id': session } } : {}) };
      }
      return { status: 200, body: resultBody(req, result, { name: HOST_NAME, version: HOST_VERSION }) };
    } catch (e) {
      if (e instanceof RpcError) return { status: statusOf(req, e), body: errorBody(req.id, e.code, e.message, e.data) };
      throw e;
    }
  }

  private cacheHints(req: McpRequest, scope: 'private' | 'public', ttlMs: number): Record<string, unknown> {
    return req.era === 'modern' ? { ttlMs, cacheScope: scope } : {};
  }

  private async dispatch(principal: Principal, req: McpRequest, notify?: (message: Record<string, unknown>) => void, io: Omit<CallIo, 'task'> = {}): Promise<Record<string, unknown>> {
    switch (req.method) {
      case 'server/discover': {
        // capabilities.extensions lists exactly the extensions served: Tasks, on the v2 mount.
        const capabilities = { tools: {}, resources: {}, prompts: {}, ...(req.mount === 'v2' ? { extensions: { [TASKS_EXTENSION]: {} } } : {}) };
        return { supportedVersions: [...(req.mount === 'v2' ? V2_MOUNT_REVISIONS : MOUNT_REVISIONS)], capabilities, instructions: INSTRUCTIONS, ...this.cacheHints(req, 'public', DISCOVER_TTL_MS) };
      }
      case 'initialize': {
        const requested = req.params.protocolVersion;
        if (typeof requested !== 'string') throw new RpcError(RPC.INVALID_PARAMS, 'initialize needs params.protocolVersion.');
        // The legacy handshake settles on the one legacy revision this mount serves; the client decides whether it speaks it.
        return { protocolVersion: MCP_LEGACY, capabilities: { tools: { listChanged: false }, resources: {}, prompts: {}, logging: {} }, serverInfo: { name: HOST_NAME, version: HOST_VERSION }, instructions: INSTRUCTIONS };
      }
      case 'ping':
        return {};
      case 'logging/setLevel':
        if (typeof req.params.level !== 'string' || !LOG_LEVELS.has(req.params.level)) throw new RpcError(RPC.INVALID_PARAMS, 'params.level must be an MCP logging level.');
        return {};
      case 'tools/list': {
        const { page, nextCursor } = pageOf(await this.exposure.tools(principal), (t) => t.name, req.params.cursor, PAGE);
        return { tools: page.map(toolOnWire), ...(nextCursor ? { nextCursor } : {}), ...this.cacheHints(req, 'private', LIST_TTL_MS) };
      }
      case 'resources/list': {
        const { page, nextCursor } = pageOf(await this.exposure.resources(principal), (r) => r.uri, req.params.cursor, PAGE);
        return {
          resources: page.map((r) => ({ uri: r.uri, name: r.name, ...(r.mimeType ? { mimeType: r.mimeType } : {}), ...(r.description ? { description: r.description } : {}) })),
          ...(nextCursor ? { nextCursor } : {}),
          ...this.cacheHints(req, 'private', LIST_TTL_MS),
        };
      }
      case 'resources/templates/list':
        pageOf([], () => '', req.params.cursor, PAGE);
        return { resourceTemplates: [], ...this.cacheHints(req, 'public', LIST_TTL_MS) };
      case 'prompts/list': {
        const { page, nextCursor } = pageOf(await this.exposure.prompts(principal), (p) => p.name, req.params.cursor, PAGE);
        return {
          prompts: page.map((p) => ({ name: p.name, ...(p.description ? { description: p.description } : {}), arguments: p.arguments })),
          ...(nextCursor ? { nextCursor } : {}),
          ...this.cacheHints(req, 'private', LIST_TTL_MS),
        };
      }
      case 'tools/call': {
        const meta = req.params._meta as Record<string, unknown> | undefined;
        const token = meta?.progressToken;
        const progressToken = typeof token === 'string' || (typeof token === 'number' && Number.isFinite(token)) ? token : undefined;
        const listener = notify && progressToken !== undefined ? (p: { progress: number; message: string }) => notify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken, ...p } }) : undefined;
        // On the v2 mount a caller that declared Tasks gets its run's task (RFC 0198 §B.3) once the run
        // first stops or the task hold ends, and until the answer is sent the run belongs to the
        // request: a client that leaves cancels it.
        // A legacy caller whose session declared elicitation, on a stream, is asked out of band.
        if (req.mount !== 'v2') return this.calls.callTool(principal, req, listener, req.era === 'legacy' && notify && isObject(req.clientCapabilities.elicitation) ? { outOfBand: notify } : {});
        return this.calls.callTool(principal, req, listener, { ...io, ...(declaresTasks(req) ? { task: (state: RunState) => this.tasks.created(principal, state) } : {}) });
      }
      case 'tasks/get':
        return this.tasks.get(principal, req);
      case 'tasks/update':
        return this.tasks.update(principal, req);
      case 'tasks/cancel':
        return this.tasks.cancel(principal, req);
      case 'subscriptions/listen':
        return this.subscriptions.listen(principal, req, notify, io.signal);
      case 'resources/read':
        // A read runs a workflow for this caller: never shared.
        return { ...(await this.calls.readResource(principal, req)), ...this.cacheHints(req, 'private', 0) };
      case 'prompts/get':
        return this.calls.getPrompt(principal, req);
      case 'elicitation/create':
        return this.calls.bridgeElicitation(principal, req);
      case 'sampling/createMessage':
        return this.sampling.createMessage(principal, req);
      default:
        this.logger.warn({ msg: 'MCP method listed as served but not dispatched', method: req.method });
        throw new RpcError(RPC.METHOD_NOT_FOUND, `Method not found: ${req.method}`);
    }
  }
}
