import { createServer } from 'node:net';
import { Inject, Injectable } from '@nestjs/common';
import { McpServerHealth, NodeExecutionError, NodeMcpError } from '@openwop-host/plugin-sdk';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import { DomainError } from '../../../platform/errors/domain-error';
import type { DispatchSubject } from '../dispatch/dispatch-policy';
import { McpToolSource } from '../sources/mcp.source';
import { TOOL_CATALOG_SETTINGS, ToolCatalogSettings, McpServerConfig } from '../tool-catalog.config';
import { CatalogClock } from '../tool-catalog.service';
import { McpCaller, McpClientService, MCP_MAX_CACHE_MS } from './mcp-client.service';
import { callToolRound, connectMcp, McpCallRound, McpConnection, McpRetry } from './mcp-connect';
import { MCP_CURRENT_REVISION, McpRevisionError } from './mcp-revision';
import { McpToolPinsService } from './mcp-tool-pins.service';
import { McpWireTap } from './mcp-wire-tap';

/** The server the conformance fixtures call, and the id bound to a loopback port nothing answers (test seams only). */
const CONFORMANCE_SERVER = 'conformance';
export const MCP_CONFORMANCE_DOWN = 'conformance.down';

/** Elicitation (form mode) is declared on calls: an `input_required` answer is asked as the node's interrupt. */
const CALL_CAPABILITIES = { elicitation: { form: {} } };

/**
 * The host side of `ctx.mcp` (plugin SDK `NodeMcp`, RFC 0204 §A): requests to the servers the
 * operator configured for a tenant, answered with the server's result as it came on the wire (read
 * through an `McpWireTap`, since the official client's parsed results drop `resultType` and fields
 * its schemas do not know). Each request is its own stateless connection through the host's MCP
 * client (`McpClientService.connect`: the same revision rules, headers, `_meta`, downgrade policy and
 * audit as the catalog's calls). Its rejections are the SDK's: `not_found` (`details.service: "mcp"`)
 * for a server the tenant does not have, `NodeMcpError` for the server's JSON-RPC error (unaltered),
 * `mcp_unreachable` for a transport failure, `mcp_tool_held` for a held tool. The run engine's
 * binding (runs/engine/node-mcp.ts) adds the effect seam, MRTR and the dispatch policy to calls.
 *
 * With the test seams on and the `conformance` server configured, `conformance.down` is bound to a
 * loopback port the host reserved and closed (the conformance suite's unreachable server).
 */
@Injectable()
export class McpHostService {
  private readonly health = new Map<string, { health: McpServerHealth; expiresAt: number }>();
  private closedPort?: Promise<number>;

  constructor(
    @Inject(TOOL_CATALOG_SETTINGS) private readonly settings: ToolCatalogSettings,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    private readonly mcp: McpClientService,
    private readonly pins: McpToolPinsService,
    private readonly source: McpToolSource,
    private readonly clock: CatalogClock,
  ) {}

  /** The server a tenant may use under this id; `not_found` (details `{service: "mcp"}`) otherwise. */
  async server(serverId: unknown, tenant: string): Promise<McpServerConfig> {
    const id = typeof serverId === 'string' ? serverId : '';
    const cfg = this.mcp.server(id, tenant) ?? (id === MCP_CONFORMANCE_DOWN ? await this.conformanceDown(tenant) : undefined);
    if (!cfg) throw new NodeExecutionError('not_found', `No MCP server "${id}" is configured for this tenant.`, { service: 'mcp', serverId: id });
    return cfg;
  }

  /** What the governed dispatch policy decides a call of this tool on: the operator's classification (unclassified: `write`). */
  dispatchSubject(cfg: McpServerConfig, name: string): DispatchSubject {
    const c = cfg.classification[name];
    return { toolId: `mcp:${cfg.id}.${name}`, safetyTier: c?.safetyTier ?? 'write', ...(c?.approval ? { approval: c.approval } : {}) };
  }

  /** The revision the host speaks with the server now (for the records of an MCP question). */
  revisionOf(serverId: string): string {
    return this.mcp.revisionOf(serverId) ?? MCP_CURRENT_REVISION;
  }

  /** Refuses a tool whose definition changed since the tenant approved it (pinned definitions), as the catalog does. */
  async assertCallable(cfg: McpServerConfig, caller: McpCaller, name: string, signal: AbortSignal): Promise<void> {
    let listed;
    try {
      listed = await this.source.listedTool(cfg, caller, name, signal);
    } catch (e) {
      // The catalog's listing of the server failed (or failed moments ago): the server is not reachable now.
      throw new NodeExecutionError('mcp_unreachable', `MCP server ${cfg.id} could not be reached: ${(e as Error)?.message ?? String(e)}`, { service: 'mcp', serverId: cfg.id });
    }
    if (listed && !(await this.pins.callable(caller.tenant, cfg.id, listed))) {
      throw new NodeExecutionError('mcp_tool_held', `The definition of mcp:${cfg.id}.${name} changed since it was approved; an operator must approve it again before it is called.`, { service: 'mcp', serverId: cfg.id, tool: name });
    }
  }

  /** One `tools/call` round; a complete round's result is the server's, unaltered. */
  callToolRound(cfg: McpServerConfig, caller: McpCaller, name: string, args: Record<string, unknown>, retry: McpRetry | undefined, signal: AbortSignal): Promise<McpCallRound> {
    return this.exchange(cfg, caller, signal, 'tools/call', async (conn, tap) => {
      const round = await callToolRound(conn, name, args, retry, signal, this.settings.sourceTimeoutMs);
      if (round.resultType !== 'complete') return round;
      return { resultType: 'complete', result: (await tap.last('tools/call'))?.result ?? round.result };
    });
  }

  /** One `tools/list` page (the first, or the one `cursor` names), unaltered; never a walk over pages. */
  listTools(cfg: McpServerConfig, caller: McpCaller, cursor: string | undefined, signal: AbortSignal): Promise<Record<string, unknown>> {
    return this.exchange(cfg, caller, signal, 'tools/list', async (conn, tap) => {
      const parsed = await conn.client.request({ method: 'tools/list', params: cursor !== undefined ? { cursor } : {} }, { signal, timeout: this.settings.sourceTimeoutMs });
      return (await tap.last('tools/list'))?.result ?? (parsed as unknown as Record<string, unknown>);
    });
  }

  /** `resources/read`, unaltered. */
  readResource(cfg: McpServerConfig, caller: McpCaller, uri: string, signal: AbortSignal): Promise<Record<string, unknown>> {
    return this.exchange(cfg, caller, signal, 'resources/read', async (conn, tap) => {
      const parsed = await conn.client.request({ method: 'resources/read', params: { uri } }, { signal, timeout: this.settings.sourceTimeoutMs });
      return (await tap.last('resources/read'))?.result ?? (parsed as unknown as Record<string, unknown>);
    });
  }

  /**
   * Reachability from a `server/discover` probe (kept for the answer's `ttlMs`, at most an hour, per
   * server and tenant): `reachable` when the host settles a revision with it (the `DiscoverResult`
   * attached, unaltered; a legacy server reached through the allowed handshake has none),
   * `incompatible` when it answered without a revision the host speaks, `unreachable` otherwise.
   */
  async serverHealth(cfg: McpServerConfig, caller: McpCaller, signal: AbortSignal): Promise<McpServerHealth> {
    const key = `${cfg.id}\u0000${caller.tenant}`;
    const kept = this.health.get(key);
    if (kept && kept.expiresAt > this.clock.now()) return structuredClone(kept.health);
    const tap = new McpWireTap();
    let health: McpServerHealth;
    try {
      const conn = await connectMcp(cfg, { signal, timeoutMs: this.settings.sourceTimeoutMs, tap });
      await conn.close();
      const discover = (await tap.last('server/discover'))?.result;
      health = { state: 'reachable', ...(conn.era === 'modern' && discover ? { discover } : {}) };
    } catch (e) {
      const discover = (await tap.last('server/discover'))?.result;
      health = e instanceof McpRevisionError ? { state: 'incompatible', ...(discover ? { discover } : {}) } : { state: 'unreachable' };
    }
    const ttl = Number(health.discover?.ttlMs);
    if (health.state !== 'unreachable' && Number.isFinite(ttl) && ttl > 0) this.health.set(key, { health, expiresAt: this.clock.now() + Math.min(ttl, MCP_MAX_CACHE_MS) });
    return structuredClone(health);
  }

  /** One request on its own connection, its failure shaped as the SDK's rejection. */
  private async exchange<T>(cfg: McpServerConfig, caller: McpCaller, signal: AbortSignal, method: string, run: (conn: McpConnection, tap: McpWireTap) => Promise<T>): Promise<T> {
    const tap = new McpWireTap();
    let conn: McpConnection | undefined;
    try {
      conn = await this.mcp.connect(cfg, caller, { signal, timeoutMs: this.settings.sourceTimeoutMs, capabilities: CALL_CAPABILITIES, tap });
      return await run(conn, tap);
    } catch (e) {
      throw this.rejection(e, cfg, conn ? (await tap.last(method))?.error : undefined);
    } finally {
      await conn?.close();
    }
  }

  private rejection(e: unknown, cfg: McpServerConfig, wireError: { code: number; message: string; data?: unknown } | undefined): Error {
    if (e instanceof NodeExecutionError) return e;
    // The server's JSON-RPC error, as it sent it (a -32021 included: a request the server refused).
    if (wireError) return new NodeMcpError(wireError);
    if (e instanceof DomainError) return new NodeExecutionError(e.code, e.message, { service: 'mcp', serverId: cfg.id, ...(e.details ?? {}) });
    const code = (e as { code?: unknown })?.code;
    if (typeof code === 'number' && Number.isInteger(code) && code < 0) {
      const err = e as { message?: unknown; data?: unknown };
      return new NodeMcpError({ code, message: typeof err.message === 'string' ? err.message : '', ...(err.data !== undefined ? { data: err.data } : {}) });
    }
    return new NodeExecutionError('mcp_unreachable', `MCP server ${cfg.id} could not be reached: ${(e as Error)?.message ?? String(e)}`, { service: 'mcp', serverId: cfg.id });
  }

  /** `conformance.down` (test seams on, `conformance` configured for the tenant): a loopback port nothing listens on. */
  private async conformanceDown(tenant: string): Promise<McpServerConfig | undefined> {
    if (!this.config.testSeams || !this.mcp.server(CONFORMANCE_SERVER, tenant)) return undefined;
    this.closedPort ??= new Promise<number>((resolve, reject) => {
      const probe = createServer();
      probe.once('error', reject);
      probe.listen(0, '127.0.0.1', () => {
        const port = (probe.address() as { port: number }).port;
        probe.close(() => resolve(port));
      });
    });
    const port = await this.closedPort;
    return { id: MCP_CONFORMANCE_DOWN, transport: 'http', url: `http://127.0.0.1:${port}/mcp`, classification: {}, downgrade: 'forbid' };
  }
}
