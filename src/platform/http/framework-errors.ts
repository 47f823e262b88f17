import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { envelopeFor, ErrorEnvelope } from '../errors/error-envelope.filter';
import { requestMajor, stampProtocol } from './protocol-version';

/**
 * Fastify and Node answer some requests before any route, guard or Nest filter sees them: a path
 * that does not decode (`%ud800`), a path parameter over `maxParamLength`, a request line or headers
 * over Node's header limit (431), a request the HTTP parser cannot read. These options make those
 * answers the canonical envelope too (spread into the Fastify adapter's options).
 */
export function frameworkErrorOptions(): {
  routerOptions: { maxParamLength: number };
  frameworkErrors: (error: Error, request: FastifyRequest, reply: FastifyReply) => void;
  clientErrorHandler: (error: Error & { code?: string }, socket: Socket) => void;
} {
  return {
    // Ids the host mints are short, but tool ids and names from packs may be long: the string limit of
    // the JSON guard (and Node's header limit) bound a path, not Fastify's default of 100 characters.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors(error, request, reply) {
      const { status, body } = envelopeFor(error, String(request.id ?? ''), requestMajor(request));
      // These answers skip the response hooks: they name their contract here.
      stampProtocol(request, reply);
      void reply.status(status).type('application/json; charset=utf-8').send(body);
    },
    clientErrorHandler(error, socket) {
      // A reset connection has nobody left to answer.
      if (error.code === 'ECONNRESET' || socket.destroyed) return;
      const { status, reason, body } = clientErrorAnswer(error.code);
      if (socket.writable) {
        const text = JSON.stringify(body);
        socket.write(`HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(text)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${text}`);
      }
      socket.destroy(error);
    },
  };
}

/** Longest path parameter routed (longer: 414 `uri_too_long`). */
export const MAX_PARAM_LENGTH = 8192;

/** The answer to a request Node's HTTP parser refused (it never became a request). */
export function clientErrorAnswer(code: string | undefined): { status: number; reason: string; body: ErrorEnvelope } {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return { status: 431, reason: 'Request Header Fields Too Large', body: { error: 'headers_too_large', message: 'The request line and headers exceed the host limit.' } };
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'ERR_HTTP_HEADERS_TIMEOUT') {
    return { status: 408, reason: 'Request Timeout', body: { error: 'request_timeout', message: 'The request was not received in time.' } };
  }
  return { status: 400, reason: 'Bad Request', body: { error: 'validation_error', message: 'The request is not valid HTTP.' } };
}
