import type { HostConfig } from '../../platform/config/host-config';
import { DEFAULT_MAX_MANIFEST_BYTES } from './packs/connection-pack-validator';

/** The `connections` section of OPENWOP_CONFIG (schema in schemas/host-config.schema.json). */
export interface ConnectionsSettings {
  /** Id of the credential key provider that seals new credentials (default `config`). */
  keyProvider: string;
  /** Largest accepted connection pack manifest, in canonical JSON bytes (default 64 KiB). */
  maxManifestBytes: number;
  /** How often stale credentials are re-sealed under the current key, in ms (default 1 hour). */
  resealIntervalMs: number;
  /** Two-key overlap (RFC 0046 §D): seconds a rotated-out credential is still offered when a rotation names none (default 1 day). */
  credentialOverlapSeconds: number;
}

/** The longest overlap a credential rotation may ask for: 30 days. */
export const MAX_CREDENTIAL_OVERLAP_SECONDS = 30 * 86_400;

export function connectionsSettings(config: Pick<HostConfig, 'file'>): ConnectionsSettings {
  const s = (config.file.connections ?? {}) as Partial<ConnectionsSettings>;
  return {
    keyProvider: s.keyProvider ?? 'config',
    maxManifestBytes: s.maxManifestBytes ?? DEFAULT_MAX_MANIFEST_BYTES,
    resealIntervalMs: s.resealIntervalMs ?? 3_600_000,
    credentialOverlapSeconds: s.credentialOverlapSeconds ?? 86_400,
  };
}
