import { MCP_MOUNT_PATH, MCP_MOUNT_V2_PATH } from '../../config/mcp-mount-settings';
import type { V2FamilyRecord } from './types';

/**
 * When the host's MCP implementation was last evaluated against the current revision (the v2 `mcp`
 * record's `refreshedAt`, re-evaluated within 90 days: bump it when the MCP code is reviewed again).
 */
export const MCP_REFRESHED_AT = '2026-12-05';

/**
 * The v2 `mcp` record (interop.md, facets/mcp.schema.json): the current revision only (2025-06-18
 * stays private), the current-only mount as an absolute URL, present while the v1 document
 * advertises the server mount.
 */
export const MCP_RECORD: V2FamilyRecord = {
  family: 'mcp',
  record: (v1, ctx) => {
    const m = v1.mcp as { serverMount?: { supported?: boolean }; serverUrls?: unknown[]; features?: unknown[] } | undefined;
    if (!m?.serverMount?.supported) return undefined;
    const v1Url = typeof m.serverUrls?.[0] === 'string' ? (m.serverUrls[0] as string) : MCP_MOUNT_PATH;
    const absolute = /^https?:\/\//i.test(v1Url) ? v1Url.slice(0, v1Url.length - MCP_MOUNT_PATH.length) + MCP_MOUNT_V2_PATH : ctx.origin ? `${ctx.origin}${MCP_MOUNT_V2_PATH}` : undefined;
    return {
      status: 'experimental',
      since: '2.0',
      witness: 'seam-gated',
      revisions: ['2026-07-28'],
      preferredVersion: '2026-07-28',
      minimumRevision: '2026-07-28',
      refreshedAt: MCP_REFRESHED_AT,
      profiles: ['mcp-2026-07-28'],
      // `extensions`: the v2 mount's server/discover lists the Tasks extension it serves (RFC 0198 §A.1).
      features: [...(m.features ?? []).filter((f) => f === 'server-discover' || f === 'mrtr' || f === 'cacheable-lists'), 'extensions'],
      ...(absolute ? { serverUrls: [absolute] } : {}),
      serverMount: { transports: ['streamable-http'] },
      mrtr: { maxRounds: 4 },
      // Pack code gets ctx.mcp (callTool, listTools, readResource, serverHealth) against the configured servers.
      client: true,
    };
  },
};
