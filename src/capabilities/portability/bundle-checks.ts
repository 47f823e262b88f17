import type { BundleItem, BundleItemKind } from '@openwop-host/plugin-sdk';
import { DomainError, UnprocessableError } from '../../platform/errors/domain-error';
import { SchemaRegistry } from '../../platform/schemas/schema-registry';
import { scanForCredentials } from '../../platform/secrets/credential-scan';

/** An export bundle (`export-bundle.schema.json`, bundleVersion "1"). */
export interface ExportBundle {
  bundleVersion: '1';
  source: { origin: string; exportedAt?: string; originPrincipal?: string | null };
  items: BundleItem[];
}

export const SUPPORTED_BUNDLE_VERSION = '1';

/**
 * The import body: `{ bundle: {...} }` (what the conformance suite sends) or the raw bundle (what
 * the CLI sends). Anything else is a malformed bundle (422, like every other bundle refusal).
 */
export function bundleFromBody(body: unknown): unknown {
  if (isObject(body) && isObject(body.bundle) && !('bundleVersion' in body)) {
    const extra = Object.keys(body).filter((k) => k !== 'bundle');
    if (extra.length) {
      throw new UnprocessableError('bundle_invalid', 'The import body carries unknown properties next to "bundle".', { properties: extra });
    }
    return body.bundle;
  }
  if (isObject(body)) return body;
  throw new UnprocessableError('bundle_invalid', 'The import body must be an export bundle or {"bundle": <export bundle>}.');
}

/**
 * Step 1: shape. `bundleVersion` first (an importer MUST refuse a version it does not understand),
 * then the official schema, then what the schema cannot say: unique refs and the item cap.
 */
export function checkBundleShape(value: unknown, maxItems: number): ExportBundle {
  if (!isObject(value)) throw new UnprocessableError('bundle_invalid', 'The bundle must be a JSON object.');
  if (value.bundleVersion !== SUPPORTED_BUNDLE_VERSION) {
    throw new UnprocessableError('bundle_version_unsupported', `Only bundleVersion "${SUPPORTED_BUNDLE_VERSION}" is understood.`, {
      supported: [SUPPORTED_BUNDLE_VERSION],
    });
  }
  // The cap is checked before the schema walk so a huge bundle costs nothing more than its parse.
  if (Array.isArray(value.items) && value.items.length > maxItems) {
    throw new DomainError('payload_too_large', 413, `The bundle has ${value.items.length} items; at most ${maxItems} are accepted.`, {
      maxItems,
      items: value.items.length,
    });
  }
  const violations = SchemaRegistry.shared().validate('export-bundle', value);
  if (violations.length) {
    // Schema messages name paths and keywords, never values.
    throw new UnprocessableError('bundle_invalid', 'The bundle does not match export-bundle.schema.json.', { violations: violations.slice(0, 50) });
  }
  const bundle = value as unknown as ExportBundle;
  const seen = new Set<string>();
  const duplicates: number[] = [];
  bundle.items.forEach((item, i) => {
    if (seen.has(item.ref)) duplicates.push(i);
    seen.add(item.ref);
  });
  if (duplicates.length) {
    // Indexes, not refs: the credential scan has not run yet, and a ref is echoed only once it has.
    throw new UnprocessableError('bundle_invalid', 'Item refs must be unique within a bundle.', { duplicateItems: duplicates.slice(0, 50) });
  }
  return bundle;
}

export interface BundleCredentialFinding {
  /** Index of the item, absent for the bundle's `source` block. */
  index?: number;
  /** The item's ref (absent for `source`, and when the ref itself is the leak). */
  ref?: string;
  kind?: BundleItemKind;
  /** JSON Pointer inside the item (e.g. `/payload/apiKey`). */
  path: string;
  /** The reference host's notation: `<kind>:<ref>.payload.apiKey`. */
  keyPath: string;
  reason: string;
}

/** Credential values anywhere in a bundle's items (paths and reasons only, never values). */
const CONNECTION_PACK_TOKEN_ENDPOINT = '/payload/provider/auth/endpoints/token';

export function findBundleCredentials(bundle: ExportBundle): BundleCredentialFinding[] {
  const out: BundleCredentialFinding[] = [];
  bundle.items.forEach((item, index) => {
    // The whole item: a ref or dependsOn entry is no place for a credential either.
    // A connection pack names its token ENDPOINT (a URL) `token`: exempt at exactly that path, as
    // the pack install scan does (RFC 0095 clause 2); value heuristics still apply to it.
    const isConnectionPack = item.kind === 'pack' && item.payload && typeof item.payload === 'object' && item.payload.kind === 'connection';
    const findings = scanForCredentials(item, isConnectionPack ? { exemptPaths: [CONNECTION_PACK_TOKEN_ENDPOINT] } : {});
    const refLeaks = findings.some((f) => f.path === '/ref');
    for (const f of findings) {
      const name = refLeaks ? `items[${index}]` : `${item.kind}:${item.ref}`;
      out.push({ index, ...(refLeaks ? {} : { ref: item.ref }), kind: item.kind, path: f.path, keyPath: `${name}${pointerToDots(f.path)}`, reason: f.reason });
    }
  });
  // The source block is informational but travels with the bundle: it must not carry one either.
  for (const f of scanForCredentials(bundle.source, { basePath: '/source' })) {
    out.push({ path: f.path, keyPath: `source${pointerToDots(f.path.slice('/source'.length))}`, reason: f.reason });
  }
  return out;
}

/** Step 2: the credential scan. Runs on dry-run too, and before any scope check. */
export function checkBundleCredentials(bundle: ExportBundle): void {
  const findings = findBundleCredentials(bundle);
  if (!findings.length) return;
  const first = findings[0];
  const where =
    first.index === undefined ? `the bundle source at ${first.path}` : `item ${first.ref ? `"${first.ref}"` : `#${first.index}`} (${first.kind}) at ${first.path}`;
  throw new UnprocessableError('bundle_credential_material', `The bundle carries a credential value in ${where}; bundles may carry only credential references.`, {
    keyPath: first.keyPath,
    findings: findings.slice(0, 50).map(({ keyPath: _k, ...f }) => f),
  });
}

/**
 * Step 3: the apply order. Kahn's algorithm, stable (ties keep bundle order). A `dependsOn` naming no
 * item of the bundle, or a cycle, refuses the bundle: applying it would break an edge.
 */
export function topologicalOrder(items: readonly BundleItem[]): BundleItem[] {
  const byRef = new Map(items.map((i) => [i.ref, i]));
  const unknown: Array<{ ref: string; dependsOn: string }> = [];
  for (const item of items) {
    for (const dep of item.dependsOn ?? []) if (!byRef.has(dep)) unknown.push({ ref: item.ref, dependsOn: dep });
  }
  if (unknown.length) {
    const u = unknown[0];
    throw new UnprocessableError('bundle_dependency_unknown', `Item "${u.ref}" depends on "${u.dependsOn}", which is not in the bundle.`, {
      unknown: unknown.slice(0, 50),
    });
  }
  const indegree = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  for (const item of items) {
    const deps = [...new Set(item.dependsOn ?? [])];
    indegree.set(item.ref, deps.length);
    for (const d of deps) pushTo(dependents, d, item.ref);
  }
  const position = new Map(items.map((i, n) => [i.ref, n]));
  // A sorted ready-list keeps the order deterministic (bundle order among independent items).
  const ready = items.filter((i) => indegree.get(i.ref) === 0).map((i) => i.ref);
  const order: BundleItem[] = [];
  while (ready.length) {
    const ref = ready.shift()!;
    order.push(byRef.get(ref)!);
    for (const next of dependents.get(ref) ?? []) {
      const left = indegree.get(next)! - 1;
      indegree.set(next, left);
      if (left === 0) insertSorted(ready, next, position);
    }
  }
  if (order.length !== items.length) {
    const cycle = findCycle(items.filter((i) => indegree.get(i.ref)! > 0), byRef);
    throw new UnprocessableError('bundle_dependency_cycle', `The items' dependsOn edges form a cycle: ${cycle.join(' → ')}.`, { cycle });
  }
  return order;
}

function insertSorted(list: string[], ref: string, position: Map<string, number>): void {
  const p = position.get(ref)!;
  let i = list.length;
  while (i > 0 && position.get(list[i - 1])! > p) i--;
  list.splice(i, 0, ref);
}

/** One cycle among the items left over by Kahn's algorithm (every one of them lies on or behind one). */
function findCycle(stuck: BundleItem[], byRef: Map<string, BundleItem>): string[] {
  const stuckRefs = new Set(stuck.map((i) => i.ref));
  // Walk dependsOn edges inside the stuck set until a ref repeats; each stuck item has a stuck dependency.
  let ref = stuck[0].ref;
  const path: string[] = [];
  const at = new Map<string, number>();
  while (!at.has(ref)) {
    at.set(ref, path.length);
    path.push(ref);
    ref = (byRef.get(ref)!.dependsOn ?? []).find((d) => stuckRefs.has(d))!;
  }
  const cycle = path.slice(at.get(ref)!);
  // Each ref depends on the next one; repeating the first closes the loop for readers.
  return [...cycle, cycle[0]];
}

function pointerToDots(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((s) => `.${s.replace(/~1/g, '/').replace(/~0/g, '~')}`)
    .join('');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

/** Appends `value` to the list under `key` (in place: copying the list per append is quadratic). */
export function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
