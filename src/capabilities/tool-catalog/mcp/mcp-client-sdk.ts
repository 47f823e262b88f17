import type * as McpClientSdk from '@modelcontextprotocol/client';
import type * as McpClientStdio from '@modelcontextprotocol/client/stdio';

/**
 * The official MCP client SDK, loaded on first use: it builds its zod schemas when it loads, which
 * costs a host that talks to no MCP server a large part of its start (hundreds of modules and
 * milliseconds). A connection loads it; its types come from the `import type` above.
 */
let sdk: typeof McpClientSdk | undefined;
export function mcpClientSdk(): typeof McpClientSdk {
  return (sdk ??= require('@modelcontextprotocol/client') as typeof McpClientSdk);
}

/** The stdio transport (a child process per server), only for a server configured with it. */
export function mcpStdioTransport(): typeof McpClientStdio.StdioClientTransport {
  return (require('@modelcontextprotocol/client/stdio') as typeof McpClientStdio).StdioClientTransport;
}
