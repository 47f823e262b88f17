import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseTraceContext, TraceContext, withTraceContext } from './trace-context';
import { SpanHandle, startSpan } from './tracing';

interface Traced {
  traceSpan?: SpanHandle;
  /** What handlers of this request see as the current trace context. */
  traceCtx?: TraceContext;
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

/**
 * W3C trace context on every HTTP request, and one server span per request while tracing is on.
 * A valid `traceparent` (and `tracestate`) is the parent; an invalid one is ignored (a new trace),
 * never refused. The handler, and everything it starts (a run it creates stores the context), runs
 * with the request's span as the current trace context. The span is named `<METHOD> <route
 * pattern>` and carries the route pattern and the status, never the raw path, query or a header.
 *
 * Each hook continues the chain inside the context: Fastify reads the body between onRequest and
 * preValidation outside it, so preValidation and preHandler enter it again.
 */
export function installRequestTracing(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request, _reply, done) => {
    const r = request as FastifyRequest & Traced;
    const remote = parseTraceContext(header(request, 'traceparent'), header(request, 'tracestate'));
    const route = request.routeOptions?.url;
    const span = startSpan(route ? `${request.method} ${route}` : request.method, {
      kind: 'server',
      parent: remote ?? null,
      attributes: { 'http.request.method': request.method, 'http.route': route, 'url.scheme': request.protocol, 'network.protocol.version': request.raw.httpVersion },
    });
    r.traceSpan = span;
    r.traceCtx = span?.context ?? remote;
    if (!r.traceCtx) return done();
    withTraceContext(r.traceCtx, done);
  });
  const reenter = (request: FastifyRequest, _reply: unknown, done: () => void) => {
    const ctx = (request as FastifyRequest & Traced).traceCtx;
    if (!ctx) return done();
    withTraceContext(ctx, done);
  };
  fastify.addHook('preValidation', reenter);
  fastify.addHook('preHandler', reenter);
  fastify.addHook('onResponse', (request, reply, done) => {
    const r = request as FastifyRequest & Traced;
    const span = r.traceSpan;
    r.traceSpan = undefined;
    if (span) {
      span.setAttributes({ 'http.response.status_code': reply.statusCode });
      if (reply.statusCode >= 500) span.fail(String(reply.statusCode));
      span.end();
    }
    done();
  });
  // A request the client abandoned gets no onResponse: end its span all the same.
  fastify.addHook('onRequestAbort', (request, done) => {
    const r = request as FastifyRequest & Traced;
    const span = r.traceSpan;
    r.traceSpan = undefined;
    if (span) {
      span.fail('aborted');
      span.end();
    }
    done();
  });
}
