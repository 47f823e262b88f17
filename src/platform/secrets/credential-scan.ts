/**
 * A generic scan for credential VALUES in a JSON document (export bundles, imports, packs).
 *
 * Two rules, both reporting only where and why, never the value:
 * - a property whose name is a credential name (apiKey, password, token, authorization...),
 *   compared exactly after lower-casing and dropping `-`/`_`, holding a non-empty string or number
 *   that is not a redaction marker `[REDACTED:<id>]`. Exact names, not substrings: `credentialRef`,
 *   `tokenUrl`, `maxTokens` and `secretsToRebind` are legitimate.
 * - a string anywhere (any key, array elements) that looks like a credential: `Bearer <x>`/`Basic
 *   <x>` header values, PEM private keys, JWTs, AWS access key ids, well-known vendor key formats
 *   (`sk-`, `ghp_`, `xoxb-`, `AIza`, `sk_live_`), URLs with an embedded password.
 */

export interface CredentialFinding {
  /** JSON Pointer of the offending property or element (prefixed by `basePath`). */
  path: string;
  /** Why it was flagged; never contains the value. */
  reason: string;
}

export interface CredentialScanOptions {
  /** Prefix of every reported path (a JSON Pointer, e.g. `/items/3/payload`). */
  basePath?: string;
  /** Exact JSON Pointers (relative to the scanned value) whose credential-named property is allowed. */
  exemptPaths?: readonly string[];
  /** Extra credential property names (normalized the same way). */
  extraNames?: readonly string[];
  /** Apply the value heuristics (default true). */
  valuePatterns?: boolean;
  /** Stop after this many findings (default 50). */
  maxFindings?: number;
}

/** Credential property names, normalized (lower case, no `-`/`_`). */
const CREDENTIAL_NAMES = new Set([
  'apikey', 'xapikey', 'apisecret', 'apitoken',
  'clientsecret', 'consumersecret', 'appsecret',
  'password', 'passwd', 'pwd', 'passphrase',
  'secret', 'secretkey', 'secretaccesskey', 'awssecretaccesskey', 'sharedsecret', 'signingsecret', 'webhooksecret',
  'token', 'accesstoken', 'refreshtoken', 'idtoken', 'sessiontoken', 'authtoken', 'bearertoken', 'bottoken',
  'privatekey', 'privatekeypem', 'bearer', 'authorization', 'proxyauthorization', 'cookie', 'setcookie',
]);

/** Keys that hold the material itself when found under a credential-named property. */
const VALUE_KEYS = new Set(['value', 'plaintext', 'raw', 'secretvalue']);

const REDACTED = /^\[REDACTED:[^\]]+\]$/;

const VALUE_PATTERNS: Array<{ re: RegExp; reason: string }> = [
  { re: /^\s*Bearer\s+\S{6,}/i, reason: 'value looks like a bearer authorization header' },
  { re: /^\s*Basic\s+[A-Za-z0-9+/=]{8,}\s*$/i, reason: 'value looks like a basic authorization header' },
  { re: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----/, reason: 'value contains a PEM private key' },
  { re: /(?:^|[^A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/, reason: 'value looks like a JWT' },
  { re: /(?:^|[^A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])/, reason: 'value looks like an AWS access key id' },
  { re: /(?:^|[^A-Za-z0-9_-])sk-(?:[A-Za-z]+-)?[A-Za-z0-9_-]{16,}/, reason: 'value looks like an API secret key (sk-...)' },
  { re: /(?:^|[^A-Za-z0-9_])[rs]k_(?:live|test)_[0-9A-Za-z]{16,}/, reason: 'value looks like a payment API secret key' },
  { re: /(?:^|[^A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{20,}/, reason: 'value looks like a GitHub token' },
  { re: /(?:^|[^A-Za-z0-9_])github_pat_[A-Za-z0-9_]{20,}/, reason: 'value looks like a GitHub token' },
  { re: /(?:^|[^A-Za-z0-9_-])xox[abposr]-[A-Za-z0-9-]{10,}/, reason: 'value looks like a Slack token' },
  { re: /(?:^|[^A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}/, reason: 'value looks like a Google API key' },
  { re: /[a-z][a-z0-9+.-]*:\/\/[^/\s:@]+:[^/\s@]+@/i, reason: 'value is a URL with an embedded password' },
];

export function normalizeCredentialName(name: string): string {
  return name.toLowerCase().replace(/[-_]/g, '');
}

export function isCredentialName(name: string, extra?: ReadonlySet<string>): boolean {
  const n = normalizeCredentialName(name);
  return CREDENTIAL_NAMES.has(n) || (extra?.has(n) ?? false);
}

export function isRedactedMarker(value: unknown): boolean {
  return typeof value === 'string' && REDACTED.test(value);
}

function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** The credential findings in `value` (empty when clean). */
export function scanForCredentials(value: unknown, opts: CredentialScanOptions = {}): CredentialFinding[] {
  const findings: CredentialFinding[] = [];
  const base = opts.basePath ?? '';
  const exempt = new Set(opts.exemptPaths ?? []);
  const extra = new Set((opts.extraNames ?? []).map(normalizeCredentialName));
  const usePatterns = opts.valuePatterns !== false;
  const max = opts.maxFindings ?? 50;
  // Iterative walk: a hostile, deeply nested document must not overflow the stack.
  // `secret` marks a subtree under a credential-named property: there a bare string in an array, or a
  // value-like key (`{ password: { value: "..." } }`), is the credential itself.
  const stack: Array<{ v: unknown; p: string; secret?: boolean }> = [{ v: value, p: '' }];
  const seen = new Set<object>();
  while (stack.length && findings.length < max) {
    const { v, p, secret } = stack.pop()!;
    if (secret && carriesValue(v)) {
      findings.push({ path: base + p, reason: 'a value inside a credential-named property' });
      continue;
    }
    if (typeof v === 'string') {
      if (usePatterns && !REDACTED.test(v)) {
        const hit = VALUE_PATTERNS.find((x) => x.re.test(v));
        if (hit) findings.push({ path: base + p, reason: hit.reason });
      }
      continue;
    }
    if (!v || typeof v !== 'object' || seen.has(v)) continue;
    seen.add(v);
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], p: `${p}/${i}` });
      continue;
    }
    const entries = Object.entries(v as Record<string, unknown>);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i];
      const childPath = `${p}/${escapePointer(key)}`;
      const named = isCredentialName(key, extra) && !exempt.has(childPath);
      if (named && carriesValue(child)) {
        findings.push({ path: base + childPath, reason: `credential-named property "${key}" carries a value` });
        continue;
      }
      if (secret && VALUE_KEYS.has(normalizeCredentialName(key)) && carriesValue(child)) {
        findings.push({ path: base + childPath, reason: 'a value inside a credential-named property' });
        continue;
      }
      if (named && Array.isArray(child)) {
        // `apiKey: ["...", "..."]`: every scalar element is a credential.
        child.forEach((el, i) => stack.push({ v: el, p: `${childPath}/${i}`, secret: typeof el !== 'object' }));
        continue;
      }
      const plainObject = !!child && typeof child === 'object' && !Array.isArray(child);
      stack.push({ v: child, p: childPath, secret: (named || secret === true) && plainObject });
    }
  }
  return findings;
}

/** A credential-named property is fine when empty, null, a boolean, a redaction marker or a structure. */
function carriesValue(v: unknown): boolean {
  if (typeof v === 'number') return true;
  if (typeof v !== 'string') return false;
  return v.trim() !== '' && !REDACTED.test(v.trim());
}
