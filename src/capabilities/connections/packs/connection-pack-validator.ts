import type { ConnectionPackManifest } from '@openwop-host/plugin-sdk';
import { canonicalJson } from '../../../platform/artifacts/artifact-registry.service';
import { SchemaRegistry, SchemaViolation } from '../../../platform/schemas/schema-registry';
import { scanForCredentialMaterial } from './credential-material-scan';

/** Codes a manifest can be refused with (the seam's `errors[].code`, the REST error code). */
export type ManifestErrorCode =
  | 'connection_pack_credential_material'
  | 'connection_pack_too_large'
  | 'validation_error'
  | 'connection_pack_invalid_api_host'
  | 'connection_pack_insecure_endpoint'
  | 'connection_pack_reach_invalid'
  | 'pack_kind_invalid';

export interface ManifestError {
  code: ManifestErrorCode;
  /** JSON Pointer of the offending value. */
  path?: string;
  message: string;
}

export const MANIFEST_SCHEMA = 'connection-pack-manifest';

/** Default cap on a manifest's canonical size: real provider definitions are a few KiB. */
export const DEFAULT_MAX_MANIFEST_BYTES = 64 * 1024;

export interface ValidateOptions {
  maxBytes?: number;
  schemas?: SchemaRegistry;
}

/**
 * Validates a connection pack manifest in the order RFC 0095 requires: the credential-material scan
 * first (a planted secret is reported as such even in a malformed manifest), then the size cap and
 * the JSON Schema, then semantic checks the schema cannot express. Returns every error of the first
 * failing stage; an empty list means installable.
 */
export function validateConnectionPackManifest(manifest: unknown, opts: ValidateOptions = {}): ManifestError[] {
  const findings = scanForCredentialMaterial(manifest);
  if (findings.length) {
    return findings.map((f) => ({
      code: 'connection_pack_credential_material' as const,
      path: f.path,
      message:
        f.reason === 'name'
          ? `A connection pack carries no credential: the property at ${f.path} is not allowed.`
          : `A connection pack carries no credential: the value at ${f.path} looks like credential material.`,
    }));
  }
  if (!manifest || typeof manifest !== 'object' || Array.isArray(manifest)) {
    return [{ code: 'validation_error', path: '', message: 'The manifest must be a JSON object.' }];
  }
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_MANIFEST_BYTES;
  const size = Buffer.byteLength(canonicalJson(manifest), 'utf8');
  if (size > maxBytes) {
    return [{ code: 'connection_pack_too_large', path: '', message: `The manifest is ${size} bytes; at most ${maxBytes} are accepted.` }];
  }
  const record = manifest as Record<string, unknown>;
  if (record.kind !== undefined && record.kind !== 'connection') {
    // A manifest of another pack kind (node pack, prompt pack...) sent to the connection-pack path.
    return [{ code: 'pack_kind_invalid', path: '/kind', message: 'A connection pack has kind "connection".' }];
  }
  const violations = (opts.schemas ?? SchemaRegistry.shared()).validate(MANIFEST_SCHEMA, manifest);
  if (violations.length) return violations.map(schemaError);
  return semanticErrors(manifest as ConnectionPackManifest);
}

function schemaError(v: SchemaViolation): ManifestError {
  const apiHost = /^\/provider\/apiHosts\/\d+$/.test(v.path) && (v.keyword === 'pattern' || v.keyword === 'format');
  return {
    code: apiHost ? 'connection_pack_invalid_api_host' : 'validation_error',
    path: v.path,
    message: apiHost ? 'An apiHosts entry must be a bare lowercase hostname with at least two labels (no scheme, port, wildcard or IP).' : v.message,
  };
}

/** Checks beyond the schema: every URL really is https with a host and no user info; one reach. */
function semanticErrors(m: ConnectionPackManifest): ManifestError[] {
  const errors: ManifestError[] = [];
  const endpoints = m.provider.auth.endpoints ?? {};
  const urls: Array<[string, string | undefined]> = [
    ['/provider/auth/endpoints/authorize', endpoints.authorize],
    ['/provider/auth/endpoints/token', endpoints.token],
    ['/provider/auth/endpoints/revoke', endpoints.revoke],
  ];
  const reach = m.provider.reach as Record<string, unknown>;
  const reachKeys = Object.keys(reach);
  if (reachKeys.length !== 1) {
    errors.push({ code: 'connection_pack_reach_invalid', path: '/provider/reach', message: 'A provider declares exactly one reach: mcp, openapi or integration.' });
  }
  if ('mcp' in reach) urls.push(['/provider/reach/mcp/server/url', (reach.mcp as { server: { url: string } }).server.url]);
  if ('openapi' in reach) {
    const ref = (reach.openapi as { ref: string }).ref;
    // An in-pack path is fine; a URL must be https like every other endpoint.
    if (/^[a-z][a-z0-9+.-]*:/i.test(ref)) urls.push(['/provider/reach/openapi/ref', ref]);
  }
  for (const [path, url] of urls) {
    if (url === undefined) continue;
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined;
    }
    if (!parsed || parsed.protocol !== 'https:' || !parsed.hostname || parsed.username || parsed.password) {
      errors.push({ code: 'connection_pack_insecure_endpoint', path, message: 'Endpoints must be absolute https URLs with a host and no user info.' });
    }
  }
  return errors;
}
