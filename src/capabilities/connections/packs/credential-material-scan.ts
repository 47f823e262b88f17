import { scanForCredentials } from '../../../platform/secrets/credential-scan';

/**
 * RFC 0095 clause 2: a connection pack carries no secret. This scan runs BEFORE schema validation,
 * so a manifest with a planted credential is refused as `connection_pack_credential_material` even
 * when it is otherwise malformed. It reports where the material sits, never the value.
 *
 * Two rules: (1) the clause-2 blocklist by property NAME, whatever the value (a pack has no business
 * declaring a `clientSecret` at all, even empty), with the single exemption of the OAuth token
 * endpoint at exactly `/provider/auth/endpoints/token`; (2) the host's generic value scan
 * (credential-looking strings anywhere: vendor token prefixes, PEM keys, JWTs, URLs with a password).
 */

/** Property names (lower-cased, `-`/`_` stripped) a pack may never declare. */
const BLOCKED_NAMES = new Set([
  'clientsecret', 'apikey', 'apisecret', 'apitoken', 'token', 'accesstoken', 'refreshtoken', 'idtoken', 'sessiontoken',
  'bearertoken', 'authtoken', 'password', 'passwd', 'passphrase', 'privatekey', 'secret', 'secretkey', 'signingsecret',
  'webhooksecret', 'credential', 'credentials', 'authorization', 'bearer', 'cookie',
]);

export const EXEMPT_TOKEN_ENDPOINT = '/provider/auth/endpoints/token';

export interface CredentialMaterialFinding {
  /** JSON Pointer of the property, e.g. `/provider/auth/clientSecret`. */
  path: string;
  reason: 'name' | 'value';
}

export function isBlockedPropertyName(name: string): boolean {
  return BLOCKED_NAMES.has(name.toLowerCase().replace(/[-_]/g, ''));
}

const pointer = (segments: readonly string[]) => segments.map((s) => `/${s.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/** Every place in `value` that carries (or is named like) credential material. */
export function scanForCredentialMaterial(value: unknown): CredentialMaterialFinding[] {
  const findings: CredentialMaterialFinding[] = [];
  const byName = new Set<string>();
  // Iterative: a hostile, deeply nested manifest must not overflow the stack.
  const stack: Array<{ v: unknown; segments: string[] }> = [{ v: value, segments: [] }];
  while (stack.length && findings.length < 50) {
    const { v, segments } = stack.pop()!;
    if (Array.isArray(v)) {
      v.forEach((item, i) => stack.push({ v: item, segments: [...segments, String(i)] }));
      continue;
    }
    if (!v || typeof v !== 'object') continue;
    for (const [key, child] of Object.entries(v as Record<string, unknown>)) {
      const childSegments = [...segments, key];
      const path = pointer(childSegments);
      // The exempt token endpoint must be a plain URL string, not a container for something else.
      if (isBlockedPropertyName(key) && !(path === EXEMPT_TOKEN_ENDPOINT && typeof child === 'string' && !Array.isArray(v))) {
        findings.push({ path, reason: 'name' });
        byName.add(path);
        continue;
      }
      stack.push({ v: child, segments: childSegments });
    }
  }
  for (const f of scanForCredentials(value, { exemptPaths: [EXEMPT_TOKEN_ENDPOINT] })) {
    if (![...byName].some((p) => f.path === p || f.path.startsWith(`${p}/`))) findings.push({ path: f.path, reason: 'value' });
  }
  return findings.sort((a, b) => a.path.localeCompare(b.path));
}
