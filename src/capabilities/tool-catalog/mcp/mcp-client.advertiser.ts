import { Inject, Injectable } from '@nestjs/common';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import { Advertiser, CapabilityAdvertiser } from '../../../platform/discovery/capability-advertiser';
import { TOOL_CATALOG_SETTINGS, ToolCatalogSettings } from '../tool-catalog.config';
import { MCP_CURRENT_REVISION, MCP_REVISIONS } from './mcp-revision';

/**
 * The host as MCP client, at the discovery root: v1 `mcp` (RFC 0153 §A: the revisions in date form,
 * the current one preferred, the `mcp-2026-07-28` profile and the features it needs; the legacy
 * revision is listed without its profile, since it is reached only as an explicit downgrade) and
 * `mcpClient` (tool output is untrusted). Advertised while at least one MCP server is configured.
 * While the host's MCP server mount is on (OPENWOP_MCP_SERVER), the `mcp` block is the mount's
 * advertiser's (src/transport/mcp), which lists the same revisions and features plus the mount's
 * keys: one block, one author, and this one adds only `mcpClient`.
 */
@Injectable()
@Advertiser()
export class McpClientAdvertiser implements CapabilityAdvertiser {
  constructor(
    @Inject(TOOL_CATALOG_SETTINGS) private readonly settings: ToolCatalogSettings,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  advertise(): Record<string, unknown> | undefined {
    if (!this.settings.mcpServers.length) return undefined;
    const client = { mcpClient: { supported: true, transports: ['stdio', 'streamable-http'], trustBoundary: 'untrusted' } };
    if (this.config.mcpMount.enabled) return client;
    return {
      ...client,
      mcp: {
        supported: true,
        protocolVersions: [...MCP_REVISIONS],
        preferredVersion: MCP_CURRENT_REVISION,
        profiles: ['mcp-2026-07-28'],
        features: ['server-discover', 'mrtr', 'cacheable-lists'],
      },
    };
  }
}
