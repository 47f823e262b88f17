import { Inject, Injectable } from '@nestjs/common';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { Advertiser, CapabilityAdvertiser } from '../../platform/discovery/capability-advertiser';
import { MCP_CURRENT, MOUNT_REVISIONS } from './mcp-wire';

/**
 * The `mcp` block of the v1 discovery document while the mount is on (RFC 0153 §A): the revisions
 * the mount serves and the host's client speaks (date form, the current one preferred), both
 * profiles (the mount serves the legacy one), the features the current profile needs, and where the
 * mount answers. The tool catalog's advertiser adds `mcpClient` and, with the mount off, writes this
 * block itself without the mount's keys.
 */
@Injectable()
@Advertiser()
export class McpMountAdvertiser implements CapabilityAdvertiser {
  constructor(@Inject(HOST_CONFIG) private readonly config: HostConfig) {}

  advertise(): Record<string, unknown> | undefined {
    const m = this.config.mcpMount;
    if (!m.enabled) return undefined;
    return {
      mcp: {
        supported: true,
        serverUrls: [m.url ?? m.path],
        serverMount: { supported: true, transports: ['streamable-http'], samplingBridge: true, elicitationBridge: true },
        protocolVersions: [...MOUNT_REVISIONS],
        preferredVersion: MCP_CURRENT,
        profiles: ['mcp-2026-07-28', 'mcp-2025-06-18-legacy'],
        features: ['server-discover', 'mrtr', 'cacheable-lists'],
      },
    };
  }
}
