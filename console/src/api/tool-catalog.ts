/** The tool catalog (`/v1/tools`) through the generated client. */
import { api, call, Schemas } from './client';

export type Tool = Schemas['ToolDescriptor'];
export type CompactTool = Schemas['CompactToolDescriptor'];
export type AnyTool = Tool | CompactTool;

export const TOOL_SOURCES = ['node-pack', 'workflow', 'mcp', 'connector', 'host-extension'] as const;
export const SAFETY_TIERS = ['pure', 'read', 'write', 'exec'] as const;
export type ToolSource = (typeof TOOL_SOURCES)[number];

/** The catalog, standard (a bare array) or RFC 0112 compact (`{tools}`) view, optionally of one source. */
export async function listTools(opts: { compact: boolean; source?: ToolSource }): Promise<AnyTool[]> {
  const body = await call(api.GET('/v1/tools', { params: { query: { ...(opts.compact ? { view: 'compact' as const } : {}), ...(opts.source ? { source: opts.source } : {}) } } }));
  return Array.isArray(body) ? body : body.tools;
}

export function getTool(toolId: string, compact: boolean): Promise<Tool & CompactTool> {
  return call(api.GET('/v1/tools/{toolId}', { params: { path: { toolId }, query: compact ? { view: 'compact' } : {} } })) as Promise<Tool & CompactTool>;
}
