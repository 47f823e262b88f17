import { Inject, Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../../platform/discovery/capability-advertiser';
import { TOOL_CATALOG_SETTINGS, ToolCatalogSettings } from '../tool-catalog.config';
import { MCP_CURRENT_REVISION, MCP_REVISIONS } from './mcp-revision';

/**
 * The host as MCP client, at the discovery root: v1 `mcp` (RFC 0153 §A: the revisions in date form,
 * the current one preferred, the `mcp-2026-07-28` profile and the features it needs; the legacy
 * revision is listed without its profile, since it is reached only as an explicit downgrade) and
 * `mcpClient` (tool output is untrusted). Advertised while at least one MCP server is configured;
 * a server mount, when there is one, adds its own keys.
 */
@Injectable()
@Advertiser()
export class McpClientAdvertiser implements CapabilityAdvertiser {
  constructor(@Inject(TOOL_CATALOG_SETTINGS) private readonly settings: ToolCatalogSettings) {}

  advertise(): Record<string, unknown> | undefined {
    if (!this.settings.mcpServers.length) return undefined;
    return {
      mcp: {
        supported: true,
        protocolVersions: [...MCP_REVISIONS],
        preferredVersion: MCP_CURRENT_REVISION,
        profiles: ['mcp-2026-07-28'],
        features: ['server-discover', 'mrtr', 'cacheable-lists'],
      },
      mcpClient: { supported: true, transports: ['stdio', 'streamable-http'], trustBoundary: 'untrusted' },
    };
  }
}
