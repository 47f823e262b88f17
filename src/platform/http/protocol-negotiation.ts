import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ProtocolSettings } from '../config/protocol-settings';
import { DomainError } from '../errors/domain-error';
import { bindRunAnswer, projectBulkAnswer } from './bound-ids';
import { clientVersion, MIN_CLIENT_VERSION, recordProtocol, requestProtocol, resolveProtocol, stampProtocol } from './protocol-version';
import { storedAfter } from '../events/v2-events';
import type { Subject } from '../identity/subject';
import type { RunRecords } from '../run-ports/run-records';
import { flattenV2Configurable, isRunSnapshot, runSubject, toV2Snapshot } from './v2-run-rendering';

/**
 * The one routing mechanism for both protocol majors (docs/versions.md): Fastify's `rewriteUrl`
 * runs before the router, decides each request's major (protocol-version.ts), records it on the
 * request and routes an unversioned major-2 operation to its `/v1` handler. Spread into the Fastify
 * adapter's options.
 */
export function protocolRoutingOptions(settings: ProtocolSettings): { rewriteUrl: (req: IncomingMessage) => string } {
  return {
    rewriteUrl(req) {
      const url = req.url ?? '/';
      const header = req.headers['openwop-version'];
      const { protocol, url: routed } = resolveProtocol(url, Array.isArray(header) ? header[0] : header, settings.majors);
      if (protocol) recordProtocol(req, protocol);
      return routed;
    },
  };
}

/**
 * The request and response halves: a refusal decided before routing is raised before anything else
 * runs (the error filter writes it), a client below `minClientVersion` asking for major 2 is refused
 * 426, and every protocol response, errors and 304s included, names its contract in
 * `OpenWOP-Version` and varies on the request's.
 */
export function installProtocolNegotiation(fastify: FastifyInstance, owners: RunOwnerSource = {}): void {
  fastify.addHook('onRequest', (request, _reply, done) => {
    const protocol = requestProtocol(request);
    if (!protocol) return done();
    const r = protocol.refusal;
    if (r) return done(new DomainError(r.code, r.status, r.message, r.details));
    if (protocol.major >= 2) {
      renameV2RequestHeaders(request.headers);
      v2StreamCursor(request);
      const key = request.headers['idempotency-key'];
      if (key !== undefined && !(typeof key === 'string' && V2_IDEMPOTENCY_KEY.test(key))) {
        return done(new DomainError('idempotency_key_invalid', 400, 'Idempotency-Key must be 22 to 128 characters of A-Z, a-z, 0-9, ".", "_", "~" and "-".', { pattern: V2_IDEMPOTENCY_KEY.source }));
      }
      const header = request.headers['openwop-client-version'];
      const client = clientVersion(Array.isArray(header) ? header[0] : header);
      const [minMajor, minMinor] = clientVersion(MIN_CLIENT_VERSION)!;
      if (client && (client[0] < minMajor || (client[0] === minMajor && client[1] < minMinor))) {
        return done(
          new DomainError('client_version_unsupported', 426, `This host serves clients from version ${MIN_CLIENT_VERSION}; OpenWOP-Client-Version "${String(header)}" is older.`, {
            minClientVersion: MIN_CLIENT_VERSION,
          }),
        );
      }
    }
    done();
  });
  // The major-2 create body's configurable is the closed, nested v2 one; the handler takes v1's flat one.
  fastify.addHook('preValidation', (request, _reply, done) => {
    if (requestProtocol(request)?.major !== 2 || request.method !== 'POST' || !/^\/v1\/runs(\?|$)/.test(request.url)) return done();
    const body = request.body as Record<string, unknown> | null | undefined;
    if (!body || typeof body !== 'object' || Array.isArray(body) || body.configurable === undefined) return done();
    try {
      body.configurable = flattenV2Configurable(body.configurable);
    } catch (e) {
      return done(e as Error);
    }
    done();
  });
  fastify.addHook('onSend', async (request, reply, payload) => {
    const protocol = requestProtocol(request);
    if (protocol?.major === 2) payload = await v2RunAnswer(request, reply, payload, owners);
    stampProtocol(request, reply);
    return payload;
  });
}

/** The v2 grammar of `Idempotency-Key` (spec v2 idempotency.md §Layer 1); v1 accepts any key it always did. */
const V2_IDEMPOTENCY_KEY = /^[A-Za-z0-9._~-]{22,128}$/;

/** v2 request headers whose v1 names the handlers read (spec v2 headers.md); the v1 names mean nothing at major 2. */
const V2_REQUEST_HEADERS: Array<[v2: string, v1: string]> = [
  ['openwop-dedup', 'x-dedup'],
  ['openwop-force-engine-version', 'x-force-engine-version'],
];

/** Under major 2 the handlers see a v2 header under its v1 name, and never a v1 name the client sent. */
export function renameV2RequestHeaders(headers: Record<string, string | string[] | undefined>): void {
  for (const [v2, v1] of V2_REQUEST_HEADERS) {
    const value = headers[v2];
    delete headers[v1];
    delete headers[v2];
    if (value !== undefined) headers[v1] = value;
  }
}

/** Where the major-2 rendering reads the owner subjects of runs (the runs capability's records; set once the application exists). */
export interface RunOwnerSource {
  current?: Pick<RunRecords, 'subjects'>;
}

/**
 * Under major 2 `Last-Event-ID` on a run's event stream names a v2 sequence (from 0); the handler
 * resumes after the stored one (from 1). A value that is not a sequence is left for it to refuse.
 */
function v2StreamCursor(request: FastifyRequest): void {
  if (request.method !== 'GET' || !/^\/v1\/runs\/[^/]+\/events(\?|$)/.test(request.url)) return;
  const id = request.headers['last-event-id'];
  if (typeof id === 'string' && /^\d{1,15}$/.test(id)) request.headers['last-event-id'] = String(storedAfter(Number(id)));
}

/**
 * A major-2 answer of a run operation: each RunSnapshot in it (the answer, a list's `runs[]`) in its
 * closed v2 representation with the owner subject recorded at the run's creation (v2-run-rendering.ts),
 * then its run ids bound to the caller's tenant (bound-ids.ts). Only JSON text answers of `/runs...`
 * (routed to `/v1/runs...`) with a caller; streams render themselves.
 */
async function v2RunAnswer(request: FastifyRequest, reply: FastifyReply, payload: unknown, owners: RunOwnerSource): Promise<unknown> {
  const tenant = (request as FastifyRequest & { principal?: { tenant?: string } }).principal?.tenant;
  if (!tenant || typeof payload !== 'string' || !/^\/v1\/runs(\/|:|\?|$)/.test(request.url)) return payload;
  if (!/^application\/json/i.test(String(reply.getHeader('content-type') ?? ''))) return payload;
  let body: unknown;
  try {
    body = JSON.parse(payload);
  } catch {
    return payload;
  }
  const snapshots = isRunSnapshot(body) ? [body] : Array.isArray((body as { runs?: unknown } | null)?.runs) ? ((body as { runs: unknown[] }).runs.filter(isRunSnapshot) as Array<Record<string, unknown>>) : [];
  if (snapshots.length) {
    const ids = snapshots.map((s) => s.runId as string);
    const subjects = owners.current ? await owners.current.subjects({ tenant }, ids) : new Map<string, Subject>();
    const render = (s: Record<string, unknown>) => toV2Snapshot(s, subjects.get(s.runId as string) ?? runSubject(tenant, (s.owner as { principal?: string }).principal, undefined));
    body = isRunSnapshot(body) ? render(body) : { ...(body as object), runs: snapshots.map(render) };
  }
  // A v2 list's last page has no nextCursor (run-list-response.schema.json); v1 writes null.
  if (Array.isArray((body as { runs?: unknown } | null)?.runs) && (body as { nextCursor?: unknown }).nextCursor === null) delete (body as { nextCursor?: unknown }).nextCursor;
  return boundRunAnswer(request, reply, body, tenant);
}

/** A major-2 run answer with its run ids bound to the caller's tenant (bound-ids.ts). */
function boundRunAnswer(request: FastifyRequest, reply: FastifyReply, body: unknown, tenant: string): unknown {
  // v1 answers a cancel of a run that had already finished with the run (200); v2 refuses it (runs.md §Cancel).
  const status = (body as { status?: unknown } | null)?.status;
  if (reply.statusCode === 200 && /^\/v1\/runs\/[^/]+\/cancel(\?|$)/.test(request.url) && (status === 'completed' || status === 'failed')) {
    reply.code(409);
    return JSON.stringify({ error: 'run_terminal', message: `The run is already ${status}.`, details: { runStatus: status } });
  }
  return JSON.stringify(projectBulkAnswer(request, bindRunAnswer(body, tenant)));
}
