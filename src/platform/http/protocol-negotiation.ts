import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ProtocolSettings } from '../config/protocol-settings';
import { DomainError } from '../errors/domain-error';
import { bindRunAnswer, projectBulkAnswer } from './bound-ids';
import { clientVersion, MIN_CLIENT_VERSION, recordProtocol, requestProtocol, resolveProtocol } from './protocol-version';

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
export function installProtocolNegotiation(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request, _reply, done) => {
    const protocol = requestProtocol(request);
    if (!protocol) return done();
    const r = protocol.refusal;
    if (r) return done(new DomainError(r.code, r.status, r.message, r.details));
    if (protocol.major >= 2) {
      renameV2RequestHeaders(request.headers);
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
  fastify.addHook('onSend', (request, reply, payload, done) => {
    const protocol = requestProtocol(request);
    if (protocol?.major === 2) payload = boundRunAnswer(request, reply, payload);
    if (protocol) {
      reply.header('OpenWOP-Version', protocol.version);
      const vary = reply.getHeader('vary');
      const current = Array.isArray(vary) ? vary.join(', ') : vary === undefined ? '' : String(vary);
      if (!/(^|,)\s*openwop-version\s*(,|$)/i.test(current)) reply.header('Vary', current ? `${current}, OpenWOP-Version` : 'OpenWOP-Version');
    }
    done(null, payload);
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

/**
 * A major-2 answer of a run operation with its run ids bound to the caller's tenant (bound-ids.ts).
 * Only JSON text answers of `/runs...` (routed to `/v1/runs...`) with a caller; streams pass as they are.
 */
function boundRunAnswer(request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown {
  const tenant = (request as FastifyRequest & { principal?: { tenant?: string } }).principal?.tenant;
  if (!tenant || typeof payload !== 'string' || !/^\/v1\/runs(\/|:|\?|$)/.test(request.url)) return payload;
  if (!/^application\/json/i.test(String(reply.getHeader('content-type') ?? ''))) return payload;
  let body: unknown;
  try {
    body = JSON.parse(payload);
  } catch {
    return payload;
  }
  // v1 answers a cancel of a run that had already finished with the run (200); v2 refuses it (runs.md §Cancel).
  const status = (body as { status?: unknown } | null)?.status;
  if (reply.statusCode === 200 && /^\/v1\/runs\/[^/]+\/cancel(\?|$)/.test(request.url) && (status === 'completed' || status === 'failed')) {
    reply.code(409);
    return JSON.stringify({ error: 'run_terminal', message: `The run is already ${status}.`, details: { runStatus: status } });
  }
  return JSON.stringify(projectBulkAnswer(request, bindRunAnswer(body, tenant)));
}
