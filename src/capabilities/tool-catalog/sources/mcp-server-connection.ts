import { Logger } from '@nestjs/common';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { withTraceHeaders } from '../../../platform/tracing/tracing';
import type { McpServerConfig } from '../tool-catalog.config';
import { ExtensionFault } from '../../../platform/errors/internal-fault';

/** What the host keeps of one MCP tool: the fields it projects. Annotations are read and ignored. */
export interface McpListedTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
}

/** Bound on `tools/list` pages, so a server returning endless cursors cannot hold the host. */
export const MAX_TOOL_LIST_PAGES = 200;

const CLIENT_INFO = { name: 'openwop-host', version: '1' };

/** A fresh, connected MCP client for a configured server (stdio spawns the process). */
export async function connectMcpClient(cfg: McpServerConfig, signal: AbortSignal, timeoutMs: number): Promise<Client> {
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  let transport: Transport;
  if (cfg.transport === 'stdio') {
    const stdio = new StdioClientTransport({ command: cfg.command, args: cfg.args, env: cfg.env, cwd: cfg.cwd, stderr: 'pipe' });
    // Drain the server's stderr so a chatty server cannot block on a full pipe; it is not logged
    // because servers print whatever they like there, credentials included.
    stdio.stderr?.on('data', () => undefined);
    transport = stdio;
  } else {
    // Each request carries the trace context current when it is sent (the tool call's span).
    transport = new StreamableHTTPClientTransport(new URL(cfg.url), { requestInit: { headers: cfg.headers ?? {} }, fetch: (url, init) => fetch(url, withTraceHeaders(init)) });
  }
  try {
    await client.connect(transport, { signal, timeout: timeoutMs });
  } catch (e) {
    await client.close().catch(() => undefined);
    throw e;
  }
  return client;
}

/**
 * The host's listing connection to one MCP server: kept open between listings, re-opened after a
 * failure. Reads every page of `tools/list`. When the connection drops unexpectedly, `onDown` is
 * told, so the catalog stops serving the server's tools at once instead of at the next TTL.
 */
export class McpServerConnection {
  private readonly log = new Logger('ToolCatalog');
  private client?: Client;
  private connecting?: Promise<Client>;
  private closing = false;

  constructor(
    readonly config: McpServerConfig,
    private readonly onDown: () => void,
  ) {}

  async listTools(signal: AbortSignal, timeoutMs: number): Promise<McpListedTool[]> {
    try {
      const client = await this.connected(signal, timeoutMs);
      const tools: McpListedTool[] = [];
      const cursors = new Set<string>();
      let cursor: string | undefined;
      for (let page = 0; ; page++) {
        if (page >= MAX_TOOL_LIST_PAGES) throw new ExtensionFault(`tools/list returned more than ${MAX_TOOL_LIST_PAGES} pages`);
        const res = await client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout: timeoutMs });
        for (const t of res.tools) {
          tools.push({
            name: t.name,
            title: typeof t.title === 'string' ? t.title : undefined,
            description: typeof t.description === 'string' ? t.description : undefined,
            inputSchema: t.inputSchema as Record<string, unknown>,
            outputSchema: t.outputSchema as Record<string, unknown> | undefined,
          });
        }
        cursor = res.nextCursor;
        if (cursor === undefined || cursor === '') break;
        if (cursors.has(cursor)) throw new ExtensionFault('tools/list repeated a cursor');
        cursors.add(cursor);
      }
      return tools;
    } catch (e) {
      await this.reset();
      throw e;
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.reset();
  }

  private async connected(signal: AbortSignal, timeoutMs: number): Promise<Client> {
    if (this.client) return this.client;
    this.connecting ??= connectMcpClient(this.config, signal, timeoutMs)
      .then((client) => {
        this.client = client;
        client.onclose = () => {
          if (this.client !== client) return;
          this.client = undefined;
          if (!this.closing) {
            this.log.warn({ msg: 'MCP server connection closed; its tools leave the catalog until it answers again', server: this.config.id });
            this.onDown();
          }
        };
        return client;
      })
      .finally(() => {
        this.connecting = undefined;
      });
    return this.connecting;
  }

  private async reset(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    if (c) await c.close().catch(() => undefined);
  }
}
