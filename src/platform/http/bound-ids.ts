import { toV2Envelope } from '../errors/v2-envelope';
import { RUN_EXTENSION } from './v2-run-rendering';

/**
 * Tenant-bound run ids under protocol major 2 (spec v2 identity.md §5, docs/versions.md): a run id
 * is `<tenantId>/<opaque>` on the wire, written in a path as one segment whose bytes outside
 * `[A-Za-z0-9._-]` become `~XX` (`acme/r-1…` → `acme~2Fr-1…`; `%2F` is accepted too). The host
 * stores the bare opaque id (what `/v1` serves), so a run created under either major is the same
 * run: requests are unbound before routing, answers bound before they leave.
 */

/** The opaque part of a tenant-bound id. */
const OPAQUE = /^[A-Za-z0-9._~-]{16,128}$/;

/** A path segment holding a bound id (`~2F` or `%2F` between tenant and opaque id), maybe with a `:verb`. */
const BOUND_SEGMENT = /^(.+?)(?:~2F|%2F)([A-Za-z0-9._~-]{16,128})(:[a-z-]+)?$/i;

/** `~XX` and `%XX` decoded (a tenant segment as the client wrote it). */
function unescapeSegment(s: string): string {
  try {
    return decodeURIComponent(s.replace(/~([0-9A-Fa-f]{2})/g, '%$1'));
  } catch {
    return s;
  }
}

/** The bound id as one path segment: every byte outside `[A-Za-z0-9._-]` as `~XX` (uppercase hex). */
export function wireSegment(bound: string): string {
  return [...Buffer.from(bound, 'utf8')].map((b) => (/[A-Za-z0-9._-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `~${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
}

/**
 * A `/runs...` path with its bound run id unbound (the run id segment only: `/runs/{runId}...`), and
 * the tenant it named. A bare id is left as it is (it resolves under the caller's tenant through
 * the overlap).
 */
export function unbindRunPath(p: string): { path: string; tenant?: string } {
  // Run ids, and webhook subscription ids (`/webhooks/{webhookId}...`), the tenant-bound kinds a path names.
  const m = /^\/(runs|webhooks)\/([^/]+)(.*)$/.exec(p);
  if (!m) return { path: p };
  const b = BOUND_SEGMENT.exec(m[2]);
  if (!b) return { path: p };
  return { path: `/${m[1]}/${b[2]}${b[3] ?? ''}${m[3]}`, tenant: unescapeSegment(b[1]) };
}

const bind = (tenant: string, id: unknown): unknown => (typeof id === 'string' && !id.includes('/') && OPAQUE.test(id) ? `${tenant}/${id}` : id);

/** A v1 link (`http://host/v1/runs/<id>/events`) as the v2 relative link to the bound run. */
function v2Link(link: unknown, tenant: string): unknown {
  if (typeof link !== 'string') return link;
  let pathname: string;
  try {
    pathname = new URL(link, 'http://localhost').pathname;
  } catch {
    return link;
  }
  const m = /^\/v1\/runs\/([^/]+)(.*)$/.exec(pathname);
  return m ? `/runs/${wireSegment(`${tenant}/${decodeURIComponent(m[1])}`)}${m[2]}` : link;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A snapshot's interrupt at major 2 (kept under `extensions["openwop-host.run"]`): `interruptId` tenant-bound, `callbackUrl` the unversioned token route. */
function interruptView(i: Json, tenant: string): Json {
  const out: Json = { ...i };
  if ('interruptId' in out) out.interruptId = bind(tenant, out.interruptId);
  if (typeof out.callbackUrl === 'string' && out.callbackUrl.startsWith('/v1/interrupts/')) out.callbackUrl = out.callbackUrl.slice('/v1'.length);
  return out;
}

/**
 * Binds the run ids of a run operation's JSON answer to the caller's tenant, at the places run
 * answers hold them (never inside run data: inputs, outputs, variables and event payloads are the
 * workflow's): the snapshot (`runId`, `fork.sourceRunId`, `eventsUrl`, `statusUrl`, its interrupt's `interruptId` and `callbackUrl`), a fork's `sourceRunId`, a resolve's `interruptId`, a list's
 * `runs[]`, a bulk answer's `results[]`, a poll's `events[]`.
 */
export function bindRunAnswer(body: unknown, tenant: string): unknown {
  if (!isObject(body)) return body;
  const one = (o: unknown): unknown => {
    if (!isObject(o)) return o;
    const out: Json = { ...o };
    if ('runId' in out) out.runId = bind(tenant, out.runId);
    if ('parentRunId' in out) out.parentRunId = bind(tenant, out.parentRunId);
    if ('sourceRunId' in out) out.sourceRunId = bind(tenant, out.sourceRunId);
    if (isObject(out.fork) && 'sourceRunId' in out.fork) out.fork = { ...out.fork, sourceRunId: bind(tenant, out.fork.sourceRunId) };
    // A suspended run's interrupt (and a resolve's answer): its id bound like a run id, its callback the unversioned route.
    if ('interruptId' in out) out.interruptId = bind(tenant, out.interruptId);
    const ext = isObject(out.extensions) ? out.extensions[RUN_EXTENSION] : undefined;
    if (isObject(ext) && isObject(ext.interrupt)) out.extensions = { ...(out.extensions as Json), [RUN_EXTENSION]: { ...ext, interrupt: interruptView(ext.interrupt, tenant) } };
    if ('eventsUrl' in out) out.eventsUrl = v2Link(out.eventsUrl, tenant);
    if ('statusUrl' in out) out.statusUrl = v2Link(out.statusUrl, tenant);
    return out;
  };
  const out = one(body) as Json;
  for (const list of ['runs', 'results', 'events']) {
    if (Array.isArray(out[list])) out[list] = (out[list] as unknown[]).map(one);
  }
  return out;
}

/** What a bulk request's ids were as the client sent them (echoed in its answer, in request order). */
const SENT_IDS = Symbol.for('openwop-host.bound-ids.sent');

/**
 * The request half that needs the caller, run once it is authenticated (the auth guard): the run
 * ids of a major-2 bulk cancel (`runIds`) are unbound when they name the caller's tenant; any other
 * id is left as it is, so it matches no run and its entry fails `not_found` (a foreign tenant's
 * run is never touched). The ids as sent are kept for the answer.
 */
export function unbindRequestBody(req: { url: string; body?: unknown }, tenant: string): void {
  if (!/^\/v1\/runs:bulk-cancel(\?|$)/.test(req.url) || !isObject(req.body) || !Array.isArray(req.body.runIds)) return;
  const sent = req.body.runIds as unknown[];
  (req as Record<symbol, unknown>)[SENT_IDS] = [...sent];
  req.body.runIds = sent.map((id) => (typeof id === 'string' && id.startsWith(`${tenant}/`) ? id.slice(tenant.length + 1) : id));
}

/**
 * A major-2 bulk answer: each `results[].runId` as the client sent it (request order), and each
 * failed entry's `error` the v2 envelope `{ error, message, details? }` (v1 writes `{ code, ... }`).
 */
export function projectBulkAnswer(req: object, body: unknown): unknown {
  const sent = (req as Record<symbol, unknown>)[SENT_IDS];
  if (!Array.isArray(sent) || !isObject(body) || !Array.isArray(body.results) || body.results.length !== sent.length) return body;
  const entry = (r: unknown, i: number): unknown => {
    if (!isObject(r)) return r;
    const out: Json = { ...r, runId: sent[i] };
    const e = out.error;
    if (isObject(e) && typeof e.code === 'string') {
      const details = isObject(e.details) ? e.details : undefined;
      out.error = toV2Envelope(0, { error: e.code, message: typeof e.message === 'string' && e.message ? e.message : e.code, ...(details ? { details } : {}) }).body;
    }
    return out;
  };
  return { ...body, results: body.results.map(entry) };
}
