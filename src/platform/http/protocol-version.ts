import * as fs from 'node:fs';
import * as path from 'node:path';
import { SCHEMAS_ROOT } from '../schemas/schema-registry';
import { V2_RECORDS } from '../discovery/v2-records';
import { unbindRunPath } from './bound-ids';

/**
 * Protocol majors in one host (spec v2 versioning.md §1, docs/versions.md): which contract a request
 * is served under, decided once from its path and `OpenWOP-Version` header before routing.
 *
 * - `/v1/...` is major 1; any other `OpenWOP-Version` there is `400 protocol_version_mismatch`.
 * - An unversioned path of the v2 path manifest is served under the header's major, or, without the
 *   header, `preferredVersion`'s (major 1 through the overlap); a major the host does not list is
 *   `406 protocol_version_unsupported`. While major 2 is served, such a path is routed to its `/v1`
 *   twin's handler (one set of handlers for both majors); answers that differ per major are rendered
 *   by the handler or the error filter from the major recorded on the request.
 * - Everything else (seams, the console, health, metrics, proprietary routes) has no major: the
 *   header is ignored and no `OpenWOP-Version` is sent back.
 */

/** The minor served per major (`<major>.<minor>` is what `protocolVersions` lists and responses name). */
const MINOR: Record<number, number> = { 1: 0, 2: 0 };

/** The lowest client `<major>.<minor>` served (discovery `minClientVersion`). */
export const MIN_CLIENT_VERSION = '1.0';

export function versionOf(major: number): string {
  return `${major}.${MINOR[major] ?? 0}`;
}

/** What discovery lists: every served `<major>.<minor>`, and the preferred one (major 1 through the overlap). */
export function protocolVersions(majors: readonly number[]): { protocolVersions: string[]; preferredVersion: string; minClientVersion: string } {
  return { protocolVersions: majors.map(versionOf), preferredVersion: versionOf(PREFERRED_MAJOR), minClientVersion: MIN_CLIENT_VERSION };
}

export const PREFERRED_MAJOR = 1;

/** A refusal decided before routing, raised by the request hook (the error filter writes it). */
export interface ProtocolRefusal {
  code: 'protocol_version_unsupported' | 'protocol_version_mismatch' | 'client_version_unsupported';
  status: 400 | 406 | 426;
  message: string;
  details: Record<string, unknown>;
}

/** The protocol facts of one request, recorded on it before routing. */
export interface RequestProtocol {
  /** The major whose contract the answer follows. */
  major: number;
  /** `OpenWOP-Version` of the answer. */
  version: string;
  refusal?: ProtocolRefusal;
  /** Under major 2: the tenant a tenant-bound run id in the path named (checked against the caller's). */
  boundTenant?: string;
}

const PROTOCOL = Symbol.for('openwop-host.protocol');

/** The protocol facts of a request (Fastify's request or Node's), or undefined when the path has no major. */
export function requestProtocol(req: unknown): RequestProtocol | undefined {
  if (!req || typeof req !== 'object') return undefined;
  const raw = (req as { raw?: unknown }).raw ?? req;
  return (raw as Record<symbol, RequestProtocol | undefined>)[PROTOCOL];
}

/** The major a request is served under: 1 for requests without one (seams, health, the console). */
/**
 * Names the contract an answer follows: `OpenWOP-Version: <major>.<minor>` and `Vary: OpenWOP-Version`
 * on every answer to a request with a major (the response hook, and the answers Fastify writes before
 * routing), nothing on the others.
 */
export function stampProtocol(request: unknown, reply: { header(name: string, value: string): unknown; getHeader(name: string): unknown }): void {
  const protocol = requestProtocol(request);
  if (!protocol) return;
  reply.header('OpenWOP-Version', protocol.version);
  const vary = reply.getHeader('vary');
  const current = Array.isArray(vary) ? vary.join(', ') : vary === undefined ? '' : String(vary);
  if (!/(^|,)\s*openwop-version\s*(,|$)/i.test(current)) reply.header('Vary', current ? `${current}, OpenWOP-Version` : 'OpenWOP-Version');
}

export function requestMajor(req: unknown): number {
  return requestProtocol(req)?.major ?? 1;
}

/** `2`, `2.0` → 2; a value that is not `<major>[.<minor>]` → NaN. */
export function requestedMajor(header: string): number {
  const m = /^\s*(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*))?\s*$/.exec(header);
  return m ? Number(m[1]) : NaN;
}

/** `OpenWOP-Client-Version` as `[major, minor]`, or undefined when malformed (a malformed value counts as absent). */
export function clientVersion(header: string | undefined): [number, number] | undefined {
  const m = header === undefined ? null : /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*))?$/.exec(header);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

interface ManifestOperation {
  method: string;
  path: string;
}

/** The unversioned operation paths of the v2 path manifest, as patterns (`{x}` is one path segment). */
const MANIFEST: RegExp[] = (
  JSON.parse(fs.readFileSync(path.join(SCHEMAS_ROOT, 'openwop', 'v2', 'path-manifest.json'), 'utf8')) as { operations: ManifestOperation[] }
).operations
  .map((o) => o.path)
  .filter((p, i, all) => all.indexOf(p) === i)
  .map((p) => new RegExp(`^${p.split(/\{[^}]+\}/).map((s) => s.replace(/[.*+?^$()|[\]\\]/g, '\\$&')).join('[^/]+')}$`));

export function isManifestPath(p: string): boolean {
  return MANIFEST.some((re) => re.test(p));
}

/**
 * Paths under `/v1` that are not protocol operations (no major, no protocol header, any
 * `OpenWOP-Version` accepted): the test seams and the proprietary `/v1/host/<org>/...` routes (the
 * MCP mount among them), except the host operations the manifest names (`/host/events`, ...).
 */
function v1WithoutMajor(p: string): boolean {
  if (p.startsWith('/v1/packs-test/')) return true;
  return p.startsWith('/v1/host/') && !isManifestPath(p.slice('/v1'.length));
}

/** The v2 seams profile's paths (spec v2 §11) and the `/v1` seams that serve them. */
const V2_SEAMS: Array<[string, string]> = [
  ['/conformance/seams/sample/', '/v1/host/sample/'],
  ['/conformance/seams/workspace/', '/v1/host/workspace/'],
  ['/conformance/seams/packs-test/', '/v1/packs-test/'],
];

/**
 * The v2 capability families whose v2 contract this host serves today: derived from the family
 * records (`src/platform/discovery/v2-records/`), so an operation of a family is routed at major 2
 * exactly when the family has a record (docs/versions.md).
 */
export const V2_FAMILIES: ReadonlySet<string> = new Set<string>(V2_RECORDS.map((r) => r.family));

/** Manifest operations gated on a family: under major 2 they are `404 not_found` unless it is listed above. */
const FAMILY_OF: Array<[RegExp, string]> = [
  [/^\/agents(\/|$)/, 'agents'],
  [/^\/runs\/[^/]+\/eval-summary$/, 'agents'],
  [/^\/content\//, 'content'],
  [/^\/prompts([/:]|$)/, 'prompts'],
  [/^\/tools(\/|$)/, 'toolCatalog'],
  [/^\/webhooks(\/|$)/, 'webhooks'],
  [/^\/trigger-subscriptions$/, 'triggerBridge'],
  [/^\/interrupts\//, 'interrupt'],
  [/^\/runs\/[^/]+\/interrupts\//, 'interrupt'],
  [/^\/runs\/[^/]+(:fork|:diff)$/, 'replay'],
  [/^\/runs\/[^/]+\/ancestry$/, 'multiAgent'],
  [/^\/host\/effect-seams$/, 'replay'],
  [/^\/runs\/[^/]+\/compensation$/, 'compensation'],
  [/^\/runs\/[^/]+\/artifacts\//, 'artifactTypes'],
];

/**
 * Manifest operations with no major-2 representation yet: never routed to their v1 twin under major 2.
 * None today (`/openapi.json` answers the v2 document, src/platform/openapi/v2-openapi.ts).
 */
const V2_UNSERVED = new Set<string>();

/** Whether an unversioned manifest path is served under major 2 (its family advertised, its representation done). */
export function servedAtMajor2(p: string): boolean {
  if (V2_UNSERVED.has(p)) return false;
  const family = FAMILY_OF.find(([re]) => re.test(p))?.[1];
  return family === undefined || V2_FAMILIES.has(family);
}

/** The `/v1` twin of an unversioned manifest path, where v1 names the operation differently. */
function v1Twin(p: string): string {
  if (p === '/prompts' || p.startsWith('/prompts/') || p.startsWith('/prompts:')) return `/v1/prompt-templates${p.slice('/prompts'.length)}`;
  return `/v1${p}`;
}

/**
 * Decides the protocol of a request from its URL and `OpenWOP-Version` header: what it records on
 * the request, and the URL it is routed by (the same URL unless a `/v1` handler serves it).
 */
export function resolveProtocol(url: string, header: string | undefined, majors: readonly number[]): { protocol?: RequestProtocol; url: string } {
  const q = url.indexOf('?');
  const p = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : url.slice(q);
  const served = majors.includes(2);
  if (p === '/v1' || p.startsWith('/v1/')) {
    if (v1WithoutMajor(p)) return { url };
    const asked = header === undefined ? 1 : requestedMajor(header);
    const protocol: RequestProtocol = { major: 1, version: versionOf(1) };
    if (asked !== 1) {
      protocol.refusal = {
        code: 'protocol_version_mismatch',
        status: 400,
        message: `A /v1 path is served under protocol major 1 only; OpenWOP-Version "${header}" names another.`,
        details: { protocolVersions: majors.map(versionOf), requested: header },
      };
    }
    return { protocol, url };
  }
  if (served) {
    const seam = V2_SEAMS.find(([v2]) => p.startsWith(v2));
    if (seam) return { url: seam[1] + url.slice(seam[0].length) };
  }
  if (!isManifestPath(p)) return { url };
  const asked = header === undefined ? PREFERRED_MAJOR : requestedMajor(header);
  if (!majors.includes(asked)) {
    return {
      url,
      protocol: {
        major: PREFERRED_MAJOR,
        version: versionOf(PREFERRED_MAJOR),
        refusal: {
          code: 'protocol_version_unsupported',
          status: 406,
          message: `This host does not serve OpenWOP-Version "${header}"; it serves ${majors.map(versionOf).join(', ')}.`,
          details: { protocolVersions: majors.map(versionOf) },
        },
      },
    };
  }
  const protocol: RequestProtocol = { major: asked, version: versionOf(asked) };
  // Discovery is one resource with a representation per major; every other operation runs its /v1
  // twin's handler. A host serving major 1 only keeps its unversioned paths as they were.
  if (!served || p === '/.well-known/openwop') return { protocol, url };
  // Under major 2 an operation of a family the v2 root does not list stays unrouted: 404 not_found.
  if (asked === 2 && !servedAtMajor2(p)) return { protocol, url };
  if (asked === 2) {
    // The v1 handlers know the bare run id; the tenant it was bound to is checked once the caller is known.
    const { path: unbound, tenant } = unbindRunPath(p);
    if (tenant !== undefined) protocol.boundTenant = tenant;
    return { protocol, url: v1Twin(unbound) + v2Query(unbound, query) };
  }
  return { protocol, url: v1Twin(p) + query };
}

/**
 * A major-2 query as its `/v1` handler reads it: the poll's cursor `afterSequence` (a v2 sequence,
 * from 0, exclusive) is v1's `lastSequence` (stored sequences start at 1, so the same event is one
 * higher); v1's own `lastSequence` means nothing at major 2 and is dropped. Other queries pass as they are.
 */
export function v2Query(p: string, query: string): string {
  if (!/^\/runs\/[^/]+\/events\/poll$/.test(p) || !query) return query;
  const params = new URLSearchParams(query.slice(1));
  const after = params.get('afterSequence');
  params.delete('lastSequence');
  params.delete('afterSequence');
  // A malformed cursor is left for the handler's validation to refuse (400 validation_error).
  if (after !== null) params.set('lastSequence', /^(0|[1-9][0-9]{0,14})$/.test(after) ? String(Number(after) + 1) : after);
  const out = params.toString();
  return out ? `?${out}` : '';
}

/** Records the protocol facts on Node's request (read back with requestProtocol). */
export function recordProtocol(raw: object, protocol: RequestProtocol): void {
  (raw as Record<symbol, RequestProtocol>)[PROTOCOL] = protocol;
}
