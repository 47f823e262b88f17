/**
 * The tenant's MCP servers and pinned tool definitions (`/v1/mcp/*`, `tools:manage` on a tenant-level
 * credential) through the generated client, and the address of the host's own MCP mount from discovery.
 */
import { api, call, paths } from './client';

export type McpServer = paths['/v1/mcp/servers']['get']['responses'][200]['content']['application/json']['servers'][number];
export type ToolPin = paths['/v1/mcp/tool-pins/{serverId}/{toolName}/approve']['post']['responses'][200]['content']['application/json'];
export type PinState = ToolPin['state'];

/** The host's error when a held tool's definition changed again after the digest an approval names was read. */
export const DEFINITION_CHANGED = 'mcp_tool_definition_changed';

export async function listMcpServers(): Promise<McpServer[]> {
  return (await call(api.GET('/v1/mcp/servers'))).servers;
}

/** The tenant's pins (every one, or those in `state`), held ones first, then by server and tool. */
export async function listToolPins(state?: PinState): Promise<ToolPin[]> {
  const { pins } = await call(api.GET('/v1/mcp/tool-pins', { params: { query: state ? { state } : {} } }));
  const rank = (p: ToolPin) => (p.state === 'held' ? 0 : 1);
  return [...pins].sort((a, b) => rank(a) - rank(b) || a.serverId.localeCompare(b.serverId) || a.toolName.localeCompare(b.toolName));
}

/** Approves the definition a held tool serves now, named by the digest that was reviewed (its `observedDigest`). */
export function approveToolPin(pin: ToolPin): Promise<ToolPin> {
  return call(api.POST('/v1/mcp/tool-pins/{serverId}/{toolName}/approve', { params: { path: { serverId: pin.serverId, toolName: pin.toolName } }, body: { digest: pin.observedDigest } }));
}

/**
 * The URL an MCP client connects to: the first of discovery's `mcp.serverUrls` (a path unless the host
 * has a public URL configured, then joined to the console's origin), or null when the host serves no
 * mount. Discovery is public and not part of the OpenAPI document, so it is read with a plain `fetch`
 * and no credential.
 */
export async function mcpMountUrl(): Promise<string | null> {
  let res: Response;
  try {
    res = await fetch('/.well-known/openwop', { headers: { accept: 'application/json' } });
  } catch (e) {
    throw new Error(`The discovery document could not be read: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!res.ok) throw new Error(`The discovery document answered ${res.status}.`);
  const doc = (await res.json()) as { mcp?: { serverUrls?: unknown } };
  const first = Array.isArray(doc.mcp?.serverUrls) ? doc.mcp.serverUrls[0] : undefined;
  if (typeof first !== 'string' || !first) return null;
  return new URL(first, window.location.origin).href;
}
