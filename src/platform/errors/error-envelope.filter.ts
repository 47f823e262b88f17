import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../database/database-driver';
import { DomainError } from './domain-error';
import { requestMajor } from '../http/protocol-version';
import { toV2Envelope } from './v2-envelope';

export interface ErrorEnvelope {
  error: string;
  message: string;
  details?: Record<string, unknown>;
}

const STATUS_CODES: Record<number, string> = {
  400: 'validation_error',
  401: 'unauthenticated',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  409: 'conflict',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  422: 'validation_error',
  429: 'rate_limited',
};

/** Seconds a client is told to wait after 503 `service_unavailable` (database unavailable). */
export const DATABASE_RETRY_AFTER_S = 5;

/** Fastify's own error codes, mapped to the protocol's canonical codes. */
const FASTIFY_CODES: Record<string, { status: number; error: string; message?: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, error: 'payload_too_large', message: 'The request body exceeds the host limit.' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, error: 'unsupported_media_type', message: 'The request content type is not supported; send application/json.' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, error: 'validation_error', message: 'The Content-Length header does not match the body.' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, error: 'validation_error', message: 'The body is empty but the content type is application/json.' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, error: 'validation_error', message: 'The body is not valid JSON.' },
  FST_ERR_BAD_URL: { status: 400, error: 'validation_error', message: 'The request path is not a valid URL (it does not decode).' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, error: 'uri_too_long', message: 'A path parameter exceeds the host limit.' },
  FST_ERR_ASYNC_CONSTRAINT: { status: 400, error: 'validation_error', message: 'The request cannot be routed.' },
  // The client stopped sending the body (or the connection broke) before it was complete.
  ECONNRESET: { status: 400, error: 'validation_error', message: 'The request body was not received completely.' },
  ECONNABORTED: { status: 400, error: 'validation_error', message: 'The request body was not received completely.' },
};

/**
 * The one place an error becomes an HTTP answer. Everything, including Fastify's router 404, its
 * body-limit 413 and JSON parse errors, leaves as `{ error, message, details? }`; 5xx answers carry
 * a correlation id and never a stack trace.
 */
@Catch()
export class ErrorEnvelopeFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const reply = ctx.getResponse<FastifyReply>();
    const request = ctx.getRequest<FastifyRequest>();
    const { status, body, headers } = envelopeFor(exception, String(request?.id ?? ''), requestMajor(request));
    if (status === 503 && body.error === 'service_unavailable') {
      this.logger.warn({ msg: 'request failed: the database is unavailable', reason: (exception as Error)?.message, correlationId: request?.id });
    } else if (status >= 500) {
      this.logger.error({ msg: 'request failed', err: exception, correlationId: request?.id });
    }
    if (headers) for (const [k, v] of Object.entries(headers)) reply.header(k, v);
    void reply.status(status).type('application/json; charset=utf-8').send(body);
  }
}

/** The answer to an error under the request's protocol major (v2: the v2 registry's codes and statuses). */
export function envelopeFor(exception: unknown, correlationId: string, major: number): { status: number; body: ErrorEnvelope; headers?: Record<string, string> } {
  const v1 = toEnvelope(exception, correlationId);
  return major === 2 ? { ...toV2Envelope(v1.status, v1.body), headers: v1.headers } : v1;
}

export function toEnvelope(
  exception: unknown,
  correlationId: string,
): { status: number; body: ErrorEnvelope; headers?: Record<string, string> } {
  // Unreachable, hung or restarting database: the request may succeed later, so say when to retry.
  if (isDatabaseUnavailable(exception)) {
    return {
      status: 503,
      body: { error: 'service_unavailable', message: 'The database is unavailable; retry later.', details: { correlationId, retryAfterMs: DATABASE_RETRY_AFTER_S * 1000 } },
      headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_S) },
    };
  }
  if (exception instanceof DomainError) {
    const body: ErrorEnvelope = { error: exception.code, message: exception.message };
    const details = { ...(exception.details ?? {}) };
    if (exception.status >= 500) details.correlationId = correlationId;
    if (Object.keys(details).length) body.details = details;
    return { status: exception.status, body, headers: exception.headers };
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const response = exception.getResponse();
    const error = STATUS_CODES[status] ?? (status >= 500 ? 'internal_error' : 'bad_request');
    let message = exception.message;
    const details: Record<string, unknown> = {};
    if (typeof response === 'object' && response !== null) {
      const r = response as Record<string, unknown>;
      if (Array.isArray(r.message)) {
        details.fields = r.message;
        message = 'The request is malformed.';
      } else if (typeof r.message === 'string') {
        message = r.message;
      }
      if (r.details && typeof r.details === 'object') Object.assign(details, r.details);
    } else if (typeof response === 'string') {
      message = response;
    }
    if (status === 404 && /^Cannot (GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)/.test(message)) {
      message = 'No such route.';
    }
    if (status >= 500) {
      message = 'The host failed to handle the request.';
      details.correlationId = correlationId;
    }
    const body: ErrorEnvelope = { error, message: message || error };
    if (Object.keys(details).length) body.details = details;
    return { status, body };
  }
  const fastifyLike = exception as { code?: unknown; statusCode?: unknown; message?: unknown } | null;
  if (fastifyLike && typeof fastifyLike === 'object') {
    const mapped = typeof fastifyLike.code === 'string' ? FASTIFY_CODES[fastifyLike.code] : undefined;
    if (mapped) {
      return { status: mapped.status, body: { error: mapped.error, message: mapped.message ?? String(fastifyLike.message) } };
    }
    if (exception instanceof SyntaxError || (typeof fastifyLike.statusCode === 'number' && fastifyLike.statusCode === 400)) {
      return { status: 400, body: { error: 'validation_error', message: 'The body is not valid JSON.' } };
    }
    if (typeof fastifyLike.statusCode === 'number' && fastifyLike.statusCode >= 400 && fastifyLike.statusCode < 500) {
      const status = fastifyLike.statusCode;
      return { status, body: { error: STATUS_CODES[status] ?? 'bad_request', message: String(fastifyLike.message ?? 'Bad request.') } };
    }
  }
  return {
    status: 500,
    body: { error: 'internal_error', message: 'The host failed to handle the request.', details: { correlationId } },
  };
}
