import { V2_RECORDS, type V2Context } from './v2-records';

export type { V2Context } from './v2-records';
export { MCP_REFRESHED_AT } from './v2-records/mcp';

/**
 * The v2 representation of `/.well-known/openwop` (spec v2 capabilities.md §3), projected from the
 * document the host composes for v1: a closed root of metadata keys plus one record
 * `{ status, since, until?, witness, ...facets }` per family whose v2 contract is served
 * (`v2-records/`, one file per family). Nothing of v1's shape survives: no `capabilities` wrapper,
 * no `supported` flags, no `profiles[]`, no transport list, no `limits`/`schemaVersions`.
 */

/** The v1 keys carried over unchanged as v2 metadata (their shapes are the same at both majors). */
const METADATA = ['protocolVersions', 'preferredVersion', 'minClientVersion', 'eventLogSchemaVersion', 'fixtures'] as const;

export function v2Root(v1: Record<string, unknown>, ctx: V2Context = {}): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const k of METADATA) if (v1[k] !== undefined) root[k] = v1[k];
  // Kept as preferredVersion's twin for v1 readers through the overlap.
  root.protocolVersion = v1.preferredVersion;
  const impl = v1.implementation as { name?: unknown; version?: unknown } | undefined;
  if (impl) root.implementation = { name: impl.name, version: impl.version };
  for (const { family, record } of V2_RECORDS) {
    const r = record(v1, ctx);
    if (r) root[family] = r;
  }
  return root;
}
