import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '../identity/principal';

/**
 * One log line per answered request, in place of Fastify's two (which carry neither who asked nor the
 * route): the route pattern (never the raw URL, whose path and query may hold identifiers), status,
 * duration, and the tenant and principal of the verified credential. Headers and bodies are never
 * logged, so neither the Authorization header nor an API key can appear.
 */
/**
 * Health probes: a load balancer or an orchestrator asks every few seconds, so their lines are debug
 * (a failing readiness probe is a warning: the database or the migrations are the news, logged where
 * they happen).
 */
export const PROBE_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

export function installRequestLog(fastify: FastifyInstance): void {
  fastify.addHook('onResponse', (request, reply, done) => {
    const principal = (request as FastifyRequest & { principal?: Principal }).principal;
    const status = reply.statusCode;
    const fields = {
      method: request.method,
      route: request.routeOptions?.url ?? null,
      status,
      durationMs: Math.round(reply.elapsedTime * 10) / 10,
      tenant: principal?.tenant ?? null,
      workspace: principal?.workspace,
      principal: principal?.principal ?? null,
      credential: principal?.kind,
    };
    if (fields.route !== null && PROBE_ROUTES.has(fields.route)) {
      if (status >= 500) request.log.warn({ msg: 'request completed', ...fields });
      else request.log.debug({ msg: 'request completed', ...fields });
    } else if (status >= 500) request.log.error({ msg: 'request completed', ...fields });
    else request.log.info({ msg: 'request completed', ...fields });
    done();
  });
}
