import { MCP_MOUNT_PATH, MCP_MOUNT_V2_PATH } from '../config/mcp-mount-settings';
import { V2_FAMILIES } from '../http/protocol-version';

/**
 * The v2 representation of `/.well-known/openwop` (spec v2 capabilities.md §3), projected from the
 * document the host composes for v1: a closed root of metadata keys plus one record
 * `{ status, since, until?, witness, ...facets }` per family whose v2 contract is served
 * (protocol-version.ts `V2_FAMILIES`). Nothing of v1's shape survives: no `capabilities` wrapper,
 * no `supported` flags, no `profiles[]`, no transport list, no `limits`/`schemaVersions`.
 */

/** The v1 keys carried over unchanged as v2 metadata (their shapes are the same at both majors). */
const METADATA = ['protocolVersions', 'preferredVersion', 'minClientVersion', 'eventLogSchemaVersion', 'fixtures'] as const;

/** What a record needs beyond the v1 document: the origin the host answers at (the v2 records name absolute URLs). */
export interface V2Context {
  origin?: string;
}

export function v2Root(v1: Record<string, unknown>, ctx: V2Context = {}): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const k of METADATA) if (v1[k] !== undefined) root[k] = v1[k];
  // Kept as preferredVersion's twin for v1 readers through the overlap.
  root.protocolVersion = v1.preferredVersion;
  const impl = v1.implementation as { name?: unknown; version?: unknown } | undefined;
  if (impl) root.implementation = { name: impl.name, version: impl.version };
  for (const family of V2_FAMILIES) {
    const record = RECORDS[family]?.(v1, ctx);
    if (record) root[family] = record;
  }
  return root;
}

/**
 * When the host's MCP implementation was last evaluated against the current revision (the v2 `mcp`
 * record's `refreshedAt`, re-evaluated within 90 days: bump it when the MCP code is reviewed again).
 */
export const MCP_REFRESHED_AT = '2026-12-05';

/** Per family, its v2 record projected from the v1 document. */
const RECORDS: Record<string, (v1: Record<string, unknown>, ctx: V2Context) => Record<string, unknown> | undefined> = {
  /**
   * The v2 `mcp` record (interop.md, facets/mcp.schema.json): the current revision only (2025-06-18
   * stays private), the current-only mount as an absolute URL, present while the v1 document
   * advertises the server mount.
   */
  mcp: (v1, ctx) => {
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
      features: (m.features ?? []).filter((f) => f === 'server-discover' || f === 'mrtr' || f === 'cacheable-lists'),
      ...(absolute ? { serverUrls: [absolute] } : {}),
      serverMount: { transports: ['streamable-http'] },
      mrtr: { maxRounds: 4 },
      // Pack code gets ctx.mcp (callTool, listTools, readResource, serverHealth) against the configured servers.
      client: true,
    };
  },
};
