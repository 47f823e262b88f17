import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import {
  ToolCallResult,
  ToolDescriptor,
  ToolInvocationContext,
  ToolListingContext,
  ToolListingScope,
  ToolSession,
  ToolSource,
  ToolSourceProvider,
} from '@openwop-host/plugin-sdk';
import { NotFoundError } from '../../../platform/errors/domain-error';
import { HealthService } from '../../../platform/health/health.service';
import { TOOL_CATALOG_SETTINGS, ToolCatalogSettings, McpServerConfig } from '../tool-catalog.config';
import { CatalogClock } from '../tool-catalog.service';
import { connectMcpClient, McpListedTool, McpServerConnection } from './mcp-server-connection';

interface ServerListing {
  /** The projected descriptors (the same objects while the server's list is unchanged). */
  descriptors: ToolDescriptor[];
  /** The server's raw list, to tell whether a refresh changed anything. */
  fingerprint: string;
  expiresAt: number;
  ok: boolean;
}

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

/**
 * `mcp`: the tools of the MCP servers in OPENWOP_CONFIG `tools.mcpServers[]`, as `mcp:<serverId>.<toolName>`.
 * Each server's full `tools/list` (every page) is cached per replica; a server that fails or is
 * down contributes no tools (the others still do) and is reported in `/readyz`.
 */
@Injectable()
@ToolSource({ source: 'mcp', name: 'mcp' })
export class McpToolSource implements ToolSourceProvider, OnApplicationShutdown {
  private readonly log = new Logger('ToolCatalog');
  private readonly connections: McpServerConnection[];
  private readonly listings = new Map<string, ServerListing>();
  private readonly inFlight = new Map<string, Promise<ServerListing>>();
  private readonly listeners: Array<(scope?: ToolListingScope) => void> = [];

  constructor(
    @Inject(TOOL_CATALOG_SETTINGS) private readonly settings: ToolCatalogSettings,
    private readonly health: HealthService,
    private readonly clock: CatalogClock,
  ) {
    this.connections = settings.mcpServers.map(
      (cfg) =>
        new McpServerConnection(cfg, () => {
          this.listings.delete(cfg.id);
          for (const l of this.listeners) l();
        }),
    );
  }

  projects(): boolean {
    return this.connections.length > 0;
  }

  subscribe(onChange: (scope?: ToolListingScope) => void): void {
    this.listeners.push(onChange);
  }

  async listTools(ctx: ToolListingContext): Promise<ToolDescriptor[]> {
    const mine = this.connections.filter((c) => !c.config.tenants || c.config.tenants.includes(ctx.tenant));
    const listed = await Promise.all(mine.map((c) => this.serverListing(c, ctx.signal)));
    return listed.flatMap((l) => l.descriptors);
  }

  /** Smoke sessions never pick an MCP tool by themselves: the host cannot know safe arguments. */
  sampleArguments(): undefined {
    return undefined;
  }

  async openSession(toolId: string, ctx: ToolInvocationContext): Promise<ToolSession> {
    const m = /^mcp:([^.]+)\.(.+)$/.exec(toolId);
    const conn = m && this.connections.find((c) => c.config.id === m[1]);
    if (!m || !conn || (conn.config.tenants && !conn.config.tenants.includes(ctx.tenant))) throw new NotFoundError('No such tool.');
    const toolName = m[2];
    const timeoutMs = this.settings.sourceTimeoutMs;
    // A session is its own MCP connection: stateful servers keep per-connection state.
    const client = await connectMcpClient(conn.config, ctx.signal, timeoutMs);
    return {
      async call(args: Record<string, unknown>, signal: AbortSignal): Promise<ToolCallResult> {
        try {
          const res = await client.callTool({ name: toolName, arguments: args }, undefined, { signal, timeout: timeoutMs });
          if (res.isError) return { status: 'error', content: res.content, error: { code: 'tool_error', message: 'The MCP tool reported an error.' } };
          return { status: 'ok', content: res.structuredContent ?? res.content };
        } catch (e) {
          return { status: 'error', error: { code: 'tool_call_failed', message: (e as Error).message } };
        }
      },
      async close(): Promise<void> {
        await client.close().catch(() => undefined);
      },
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
  }

  /** The server's tools, cached; a failed server yields none (and is retried after a short backoff). */
  private serverListing(conn: McpServerConnection, signal: AbortSignal): Promise<ServerListing> {
    const id = conn.config.id;
    const cached = this.listings.get(id);
    if (cached && cached.expiresAt > this.clock.now()) return Promise.resolve(cached);
    let pending = this.inFlight.get(id);
    if (!pending) {
      pending = this.fetch(conn, signal).finally(() => this.inFlight.delete(id));
      this.inFlight.set(id, pending);
    }
    return pending;
  }

  private async fetch(conn: McpServerConnection, signal: AbortSignal): Promise<ServerListing> {
    const id = conn.config.id;
    const started = this.clock.now();
    // Half the catalog TTL: the catalog's own per-tenant cache sits on top, so a change on the
    // server shows within 1.5 × TTL at most.
    const ttl = Math.floor(this.settings.cacheTtlMs / 2);
    // A deadline below the catalog's, so one hanging server does not time out the whole source.
    const timeoutMs = Math.max(10, Math.floor(this.settings.sourceTimeoutMs * 0.8));
    let listing: ServerListing;
    try {
      const tools = await conn.listTools(signal, timeoutMs);
      const fingerprint = JSON.stringify(tools);
      const prev = this.listings.get(id);
      const descriptors = prev?.ok && prev.fingerprint === fingerprint ? prev.descriptors : tools.map((t) => mcpToolDescriptor(conn.config, t));
      listing = { descriptors, fingerprint, expiresAt: started + ttl, ok: true };
      this.health.report(`mcp-server:${id}`, true, undefined, { tools: tools.length });
    } catch (e) {
      const reason = (e as Error)?.message ?? String(e);
      this.log.error({ msg: 'MCP server unavailable; its tools are left out', server: id, reason });
      this.health.report(`mcp-server:${id}`, false, `MCP server ${id} is unavailable (${reason}); its tools are left out`);
      listing = { descriptors: [], fingerprint: '', expiresAt: started + Math.min(ttl, 5_000), ok: false };
    }
    this.listings.set(id, listing);
    return listing;
  }
}
