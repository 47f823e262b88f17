import { Logger } from '@nestjs/common';
import type { McpServerConfig } from '../tool-catalog.config';
import { ExtensionFault } from '../../../platform/errors/internal-fault';
import { listAllTools, McpConnection } from '../mcp/mcp-connect';
import { MCP_MAX_CACHE_MS, McpCaller, McpClientService } from '../mcp/mcp-client.service';

/** What the host keeps of one MCP tool: the fields it projects. Annotations are read and ignored. */
export interface McpListedTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
}

/** One server's whole `tools/list`, the revision it was made under and the server's cache hints. */
export interface McpServerListing {
  tools: McpListedTool[];
  revision: string;
  ttlMs?: number;
  cacheScope?: 'public' | 'private';
}

/** Bound on `tools/list` pages, so a server returning endless cursors cannot hold the host. */
export const MAX_TOOL_LIST_PAGES = 200;

function listedTool(t: Record<string, unknown>): McpListedTool {
  if (typeof t.name !== 'string' || !t.name) throw new ExtensionFault('tools/list returned a tool without a name');
  return {
    name: t.name,
    title: typeof t.title === 'string' ? t.title : undefined,
    description: typeof t.description === 'string' ? t.description : undefined,
    inputSchema: (t.inputSchema && typeof t.inputSchema === 'object' ? t.inputSchema : { type: 'object' }) as Record<string, unknown>,
    outputSchema: t.outputSchema && typeof t.outputSchema === 'object' ? (t.outputSchema as Record<string, unknown>) : undefined,
  };
}

/**
 * The host's listing connection to one MCP server: opened on the first listing (never at start),
 * kept between listings, re-opened after a failure and, at the current revision, once the server's
 * `server/discover` answer is stale (the revision is negotiated again). Reads every page of
 * `tools/list`. When the connection drops unexpectedly, `onDown` is told, so the catalog stops
 * serving the server's tools at once instead of at the next TTL.
 */
export class McpServerConnection {
  private readonly log = new Logger('ToolCatalog');
  private conn?: McpConnection;
  private connectedAt = 0;
  private connecting?: Promise<McpConnection>;
  private closing = false;

  constructor(
    readonly config: McpServerConfig,
    private readonly mcp: McpClientService,
    private readonly now: () => number,
    private readonly onDown: () => void,
  ) {}

  async listTools(caller: McpCaller, signal: AbortSignal, timeoutMs: number): Promise<McpServerListing> {
    try {
      const conn = await this.connected(caller, signal, timeoutMs);
      const list = await listAllTools(conn, signal, timeoutMs);
      return { tools: list.tools.map(listedTool), revision: conn.revision, ...(list.ttlMs !== undefined ? { ttlMs: list.ttlMs } : {}), ...(list.cacheScope ? { cacheScope: list.cacheScope } : {}) };
    } catch (e) {
      await this.reset();
      this.mcp.reset(this.config.id);
      throw e;
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.reset();
  }

  private stale(conn: McpConnection): boolean {
    if (conn.era !== 'modern') return false;
    const ttl = Number((conn.verdict.discover as { ttlMs?: unknown } | undefined)?.ttlMs);
    return this.now() - this.connectedAt >= Math.min(Number.isFinite(ttl) && ttl >= 0 ? ttl : 0, MCP_MAX_CACHE_MS);
  }

  private async connected(caller: McpCaller, signal: AbortSignal, timeoutMs: number): Promise<McpConnection> {
    if (this.conn && !this.stale(this.conn)) return this.conn;
    if (this.conn) await this.reset();
    this.connecting ??= this.mcp
      .connect(this.config, caller, { signal, timeoutMs })
      .then((conn) => {
        this.conn = conn;
        this.connectedAt = this.now();
        conn.client.onclose = () => {
          if (this.conn !== conn) return;
          this.conn = undefined;
          if (!this.closing) {
            this.log.warn({ msg: 'MCP server connection closed; its tools leave the catalog until it answers again', server: this.config.id });
            this.onDown();
          }
        };
        return conn;
      })
      .finally(() => {
        this.connecting = undefined;
      });
    return this.connecting;
  }

  private async reset(): Promise<void> {
    const c = this.conn;
    this.conn = undefined;
    if (c) await c.close();
  }
}
