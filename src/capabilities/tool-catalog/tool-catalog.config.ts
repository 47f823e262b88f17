import type { ToolApproval, ToolEgress, ToolReplayPolicy, ToolSafetyTier } from '@openwop-host/plugin-sdk';
import type { HostConfig } from '../../platform/config/host-config';
import { ConfigError } from '../../platform/config/config-error';
import type { DispatchPolicyDocument } from './dispatch/dispatch-policy';

/** How the operator classifies one MCP tool (server annotations are never trusted for this). */
export interface McpToolClassification {
  safetyTier: Exclude<ToolSafetyTier, 'exec'>;
  replayPolicy?: ToolReplayPolicy;
  egress?: ToolEgress;
  approval?: ToolApproval;
  auth?: { scopes?: string[]; credentialRef?: boolean };
}

interface McpServerBase {
  id: string;
  /** Tenants that see this server's tools; undefined means every tenant. */
  tenants?: string[];
  classification: Record<string, McpToolClassification>;
  /** Whether a server that does not speak the current MCP revision may be reached through the 2025-06-18 handshake (default allow). */
  downgrade: 'allow' | 'forbid';
}

export interface McpStdioServerConfig extends McpServerBase {
  transport: 'stdio';
  command: string;
  args: string[];
  env?: Record<string, string>;
  cwd?: string;
}

export interface McpHttpServerConfig extends McpServerBase {
  transport: 'http';
  url: string;
  headers?: Record<string, string>;
}

export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

export interface ToolCatalogSettings {
  cacheTtlMs: number;
  sourceTimeoutMs: number;
  packDirectory?: string;
  mcpServers: McpServerConfig[];
  hostExtensions: Array<Record<string, unknown>>;
  /** The default governed dispatch policy of every tenant (`tools.dispatchPolicy`); undefined when not configured. */
  dispatchPolicy?: DispatchPolicyDocument;
}

export const TOOL_CATALOG_SETTINGS = Symbol.for('openwop-host.tool-catalog.settings');

export const DEFAULT_CACHE_TTL_MS = 30_000;

/**
 * The `tools` section of OPENWOP_CONFIG, already validated against schemas/host-config.schema.json
 * by the platform (shapes and enums); this only fills in defaults.
 */
export function toolCatalogSettings(config: Pick<HostConfig, 'file' | 'toolSourceTimeoutMs'>): ToolCatalogSettings {
  const section = (config.file.tools ?? {}) as Record<string, unknown>;
  const servers = (section.mcpServers as Array<Record<string, unknown>> | undefined) ?? [];
  const ids = new Set<string>();
  const mcpServers = servers.map((s): McpServerConfig => {
    const id = String(s.id);
    // The schema cannot express uniqueness of a property across items.
    if (ids.has(id)) throw new ConfigError(`OPENWOP_CONFIG tools.mcpServers: duplicate server id "${id}"`);
    ids.add(id);
    const base = {
      id,
      tenants: s.tenants as string[] | undefined,
      classification: (s.classification as Record<string, McpToolClassification> | undefined) ?? {},
      downgrade: s.downgrade === 'forbid' ? ('forbid' as const) : ('allow' as const),
    };
    if (s.transport === 'http') {
      return { ...base, transport: 'http', url: String(s.url), headers: s.headers as Record<string, string> | undefined };
    }
    return {
      ...base,
      transport: 'stdio',
      command: String(s.command),
      args: (s.args as string[] | undefined) ?? [],
      env: s.env as Record<string, string> | undefined,
      cwd: s.cwd as string | undefined,
    };
  });
  return {
    cacheTtlMs: typeof section.cacheTtlMs === 'number' ? section.cacheTtlMs : DEFAULT_CACHE_TTL_MS,
    sourceTimeoutMs: config.toolSourceTimeoutMs,
    packDirectory: typeof section.packDirectory === 'string' ? section.packDirectory : undefined,
    mcpServers,
    hostExtensions: (section.hostExtensions as Array<Record<string, unknown>> | undefined) ?? [],
    dispatchPolicy: section.dispatchPolicy as DispatchPolicyDocument | undefined,
  };
}
