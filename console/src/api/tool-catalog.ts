/** The tool catalog (`/v1/tools`) and its governed dispatch policy through the generated client. */
import { api, call, paths, Schemas } from './client';

export type Tool = Schemas['ToolDescriptor'];
export type CompactTool = Schemas['CompactToolDescriptor'];
export type AnyTool = Tool | CompactTool;

export const TOOL_SOURCES = ['node-pack', 'workflow', 'mcp', 'connector', 'host-extension'] as const;
export const SAFETY_TIERS = ['pure', 'read', 'write', 'exec'] as const;
export type ToolSource = (typeof TOOL_SOURCES)[number];

/** The catalog, standard (a bare array) or RFC 0112 compact view (its own operation, `{tools}`), optionally of one source. */
export async function listTools(opts: { compact: boolean; source?: ToolSource }): Promise<AnyTool[]> {
  const query = opts.source ? { source: opts.source } : {};
  if (opts.compact) return (await call(api.GET('/v1/compact-tools', { params: { query } }))).tools;
  return call(api.GET('/v1/tools', { params: { query } }));
}

export function getTool(toolId: string, compact: boolean): Promise<Tool & CompactTool> {
  const params = { path: { toolId } };
  const read: Promise<AnyTool> = compact ? call(api.GET('/v1/compact-tools/{toolId}', { params })) : call(api.GET('/v1/tools/{toolId}', { params }));
  return read as Promise<Tool & CompactTool>;
}

export type DispatchPolicy = paths['/v1/tools/dispatch-policy']['get']['responses'][200]['content']['application/json'];
export type DispatchDecision = DispatchPolicy['tiers']['pure'];

/** The tenant's dispatch policy in force, its layers and revision (`tools:manage`, tenant-level credential). */
export function getDispatchPolicy(): Promise<DispatchPolicy> {
  return call(api.GET('/v1/tools/dispatch-policy'));
}
