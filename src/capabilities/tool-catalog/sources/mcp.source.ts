import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import {
  ToolDescriptor,
  ToolInvocationContext,
  ToolListingContext,
  ToolListingScope,
  ToolSession,
  ToolSource,
  ToolSourceProvider,
} from '@openwop-host/plugin-sdk';
import { DomainError, NotFoundError } from '../../../platform/errors/domain-error';
import { HealthService } from '../../../platform/health/health.service';
import { TOOL_CATALOG_SETTINGS, ToolCatalogSettings, McpServerConfig } from '../tool-catalog.config';
import { CatalogClock } from '../tool-catalog.service';
import { McpCaller, McpClientService, MCP_MAX_CACHE_MS, authContextOf, serverOrigin } from '../mcp/mcp-client.service';
import { McpResponseCache } from '../mcp/mcp-response-cache';
import { McpToolPinsService } from '../mcp/mcp-tool-pins.service';
import { McpToolSession } from '../mcp/mcp-tool-session';
import { McpListedTool, McpServerConnection, McpServerListing } from './mcp-server-connection';

/** A failed server is tried again no sooner than this. */
const FAILURE_BACKOFF_MS = 5_000;
const MAX_DESCRIPTORS = 10_000;

/**
 * The projection of one MCP tool. Classification is the operator's, never the server's: a tool
 * without an entry in `classification` is `write` / `non-deterministic` / `host-mediated`, whatever
 * its annotations claim (RFC 0204 §D.11, `tool-annotations-untrusted`).
 */
export function mcpToolDescriptor(server: McpServerConfig, tool: McpListedTool): ToolDescriptor {
  const cls = server.classification[tool.name];
  const d: ToolDescriptor = {
    toolId: `mcp:${server.id}.${tool.name}`,
    source: 'mcp',
    title: tool.title ?? tool.name,
    inputSchema: tool.inputSchema,
    egress: cls?.egress ?? 'host-mediated',
    replayPolicy: cls?.replayPolicy ?? 'non-deterministic',
    safetyTier: cls?.safetyTier ?? 'write',
  };
  if (tool.description) d.description = tool.description;
  if (tool.outputSchema) d.outputSchema = tool.outputSchema;
  if (cls?.approval) d.approval = cls.approval;
  if (cls?.auth) d.auth = structuredClone(cls.auth);
  return d;
}

/** The tool whose definition a held pin refers to may not be called. */
export class McpToolHeldError extends DomainError {
  constructor(toolId: string) {
    super('mcp_tool_held', 409, `The definition of ${toolId} changed since it was approved; an operator must approve it again before it is called.`);
  }
}

/**
 * `mcp`: the tools of the MCP servers in OPENWOP_CONFIG `tools.mcpServers[]`, as `mcp:<serverId>.<toolName>`.
 * Each server's whole `tools/list` (every page) is cached per replica for the TTL the server gives
 * (`ttlMs`, capped; half the catalog TTL on the legacy revision), shared between tenants only when
 * the server says `cacheScope: "public"`. A server that fails or is down contributes no tools (the
 * others still do) and is reported in `/readyz`. A tool whose definition changed since the tenant
 * first saw it is held out (pinned definitions).
 */
@Injectable()
@ToolSource({ source: 'mcp', name: 'mcp' })
export class McpToolSource implements ToolSourceProvider, OnApplicationShutdown {
  private readonly log = new Logger('ToolCatalog');
  private readonly connections: Map<string, McpServerConnection>;
  private readonly cache: McpResponseCache<McpServerListing>;
  private readonly inFlight = new Map<string, Promise<McpServerListing>>();
  private readonly failedUntil = new Map<string, number>();
  /** The same descriptor object for an unchanged tool, so the catalog skips re-validating it. */
  private readonly descriptors = new Map<string, ToolDescriptor>();
  private readonly listeners: Array<(scope?: ToolListingScope) => void> = [];

  constructor(
    @Inject(TOOL_CATALOG_SETTINGS) private readonly settings: ToolCatalogSettings,
    private readonly health: HealthService,
    private readonly clock: CatalogClock,
    private readonly mcp: McpClientService,
    private readonly pins: McpToolPinsService,
  ) {
    this.cache = new McpResponseCache((): number => this.clock.now());
    pins.onApproved((tenant) => {
      for (const l of this.listeners) l({ tenant });
    });
    this.connections = new Map(
      settings.mcpServers.map((cfg) => [
        cfg.id,
        new McpServerConnection(cfg, mcp, () => this.clock.now(), () => {
          this.cache.dropOrigin(serverOrigin(cfg));
          for (const l of this.listeners) l();
        }),
      ]),
    );
  }

  projects(): boolean {
    return this.connections.size > 0;
  }

  subscribe(onChange: (scope?: ToolListingScope) => void): void {
    this.listeners.push(onChange);
  }

  async listTools(ctx: ToolListingContext): Promise<ToolDescriptor[]> {
    const caller: McpCaller = { tenant: ctx.tenant, workspace: ctx.workspace };
    const listed = await Promise.all(
      this.mcp.servers(ctx.tenant).map(async (cfg) => {
        const listing = await this.serverListing(cfg, caller, ctx.signal).catch(() => undefined);
        if (!listing) return [];
        const admitted = await this.pins.admit(ctx.tenant, cfg.id, listing.tools);
        return listing.tools.filter((t) => admitted.has(t.name)).map((t) => this.descriptor(cfg, t));
      }),
    );
    return listed.flat();
  }

  /** Smoke sessions never pick an MCP tool by themselves: the host cannot know safe arguments. */
  sampleArguments(): undefined {
    return undefined;
  }

  /**
   * A session is its own connection (stateful legacy servers keep per-connection state), opened
   * for a tool the tenant's catalog serves and whose pinned definition still holds.
   */
  async openSession(toolId: string, ctx: ToolInvocationContext): Promise<ToolSession> {
    const m = /^mcp:([^.]+)\.(.+)$/.exec(toolId);
    const cfg = m ? this.mcp.server(m[1], ctx.tenant) : undefined;
    if (!m || !cfg) throw new NotFoundError('No such tool.');
    const toolName = m[2];
    const caller: McpCaller = { tenant: ctx.tenant, workspace: ctx.workspace, principal: { principal: ctx.principal, kind: 'system', scopes: ctx.scopes } };
    const listing = await this.serverListing(cfg, { tenant: ctx.tenant, workspace: ctx.workspace }, ctx.signal);
    const tool = listing.tools.find((t) => t.name === toolName);
    if (!tool) throw new NotFoundError('No such tool.');
    if (!(await this.pins.callable(ctx.tenant, cfg.id, tool))) throw new McpToolHeldError(toolId);
    const timeoutMs = this.settings.sourceTimeoutMs;
    // Elicitation (form mode) is declared: an input_required answer suspends the run on a clarification.
    const conn = await this.mcp.connect(cfg, caller, { signal: ctx.signal, timeoutMs, capabilities: { elicitation: { form: {} } } });
    return new McpToolSession(cfg.id, toolName, conn, timeoutMs);
  }

  /**
   * The definition a configured server lists for one tool now (the catalog's cached listing, as a
   * call through the catalog reads it), for the pinned-definition check of a direct call (`ctx.mcp`).
   */
  async listedTool(cfg: McpServerConfig, caller: McpCaller, toolName: string, signal: AbortSignal): Promise<McpListedTool | undefined> {
    if (!this.connections.has(cfg.id)) return undefined;
    const listing = await this.serverListing(cfg, { tenant: caller.tenant, workspace: caller.workspace }, signal);
    return listing.tools.find((t) => t.name === toolName);
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.close()));
  }

  private descriptor(cfg: McpServerConfig, tool: McpListedTool): ToolDescriptor {
    const key = `${cfg.id}\u0000${JSON.stringify(tool)}`;
    let d = this.descriptors.get(key);
    if (!d) {
      d = mcpToolDescriptor(cfg, tool);
      if (this.descriptors.size >= MAX_DESCRIPTORS) this.descriptors.clear();
      this.descriptors.set(key, d);
    }
    return d;
  }

  /** The server's tools for a caller: cached per the server's hints, fetched once at a time per key. */
  private serverListing(cfg: McpServerConfig, caller: McpCaller, signal: AbortSignal): Promise<McpServerListing> {
    const conn = this.connections.get(cfg.id) as McpServerConnection;
    const key = { serverId: cfg.id, tenant: caller.tenant, workspace: caller.workspace, origin: serverOrigin(cfg), revision: this.mcp.revisionOf(cfg.id) ?? '', authContext: authContextOf(cfg) };
    const cached = this.cache.get('tools/list', key);
    if (cached) return Promise.resolve(cached);
    if ((this.failedUntil.get(cfg.id) ?? 0) > this.clock.now()) return Promise.reject(new DomainError('tool_call_failed', 502, `MCP server ${cfg.id} is unavailable.`));
    const flightKey = JSON.stringify(key);
    let pending = this.inFlight.get(flightKey);
    if (!pending) {
      pending = this.fetch(cfg, conn, caller, signal).finally(() => this.inFlight.delete(flightKey));
      this.inFlight.set(flightKey, pending);
    }
    return pending;
  }

  private async fetch(cfg: McpServerConfig, conn: McpServerConnection, caller: McpCaller, signal: AbortSignal): Promise<McpServerListing> {
    // A deadline below the catalog's, so one hanging server does not time out the whole source.
    const timeoutMs = Math.max(10, Math.floor(this.settings.sourceTimeoutMs * 0.8));
    try {
      const listing = await conn.listTools(caller, signal, timeoutMs);
      // The server's TTL (capped); on the legacy revision, which has none, half the catalog TTL (the
      // catalog's own per-tenant cache sits on top, so a change shows within 1.5 × TTL at most).
      const ttl = Math.min(listing.ttlMs ?? Math.floor(this.settings.cacheTtlMs / 2), MCP_MAX_CACHE_MS);
      this.cache.set('tools/list', { serverId: cfg.id, tenant: caller.tenant, workspace: caller.workspace, origin: serverOrigin(cfg), revision: listing.revision, authContext: authContextOf(cfg) }, listing, ttl, listing.cacheScope);
      this.failedUntil.delete(cfg.id);
      this.health.report(`mcp-server:${cfg.id}`, true, undefined, { tools: listing.tools.length, revision: listing.revision });
      return listing;
    } catch (e) {
      const reason = (e as Error)?.message ?? String(e);
      this.log.error({ msg: 'MCP server unavailable; its tools are left out', server: cfg.id, reason });
      this.health.report(`mcp-server:${cfg.id}`, false, `MCP server ${cfg.id} is unavailable (${reason}); its tools are left out`);
      this.failedUntil.set(cfg.id, this.clock.now() + Math.min(Math.floor(this.settings.cacheTtlMs / 2), FAILURE_BACKOFF_MS));
      throw e;
    }
  }
}
