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

export function v2Root(v1: Record<string, unknown>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const k of METADATA) if (v1[k] !== undefined) root[k] = v1[k];
  // Kept as preferredVersion's twin for v1 readers through the overlap.
  root.protocolVersion = v1.preferredVersion;
  const impl = v1.implementation as { name?: unknown; version?: unknown } | undefined;
  if (impl) root.implementation = { name: impl.name, version: impl.version };
  for (const family of V2_FAMILIES) {
    const record = RECORDS[family]?.(v1);
    if (record) root[family] = record;
  }
  return root;
}

/** Per family, its v2 record projected from the v1 document (none yet: V2_FAMILIES is empty). */
const RECORDS: Record<string, (v1: Record<string, unknown>) => Record<string, unknown> | undefined> = {};
