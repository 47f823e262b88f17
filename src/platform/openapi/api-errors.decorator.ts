import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { protocolSchemaRef } from './protocol-schemas';

const DESCRIPTIONS: Record<number, string> = {
  400: 'validation_error: the request is malformed (details list the fields).',
  401: 'unauthenticated: missing, malformed, unknown, expired or revoked credential.',
  403: 'forbidden: the credential lacks a required scope (details.requiredScopes).',
  404: 'not_found: the resource does not exist or the caller may not see it.',
  409: 'Conflict with the current state.',
  410: 'Gone: the resource expired (interrupt_expired: a signed interrupt token past its expiry).',
  413: 'payload_too_large: the body exceeds limits.maxRequestBodyBytes.',
  415: 'unsupported_media_type: send application/json.',
  422: 'The request is understood but refused on its meaning.',
  429: 'rate_limited: over the rate budget of the credential or client address (Retry-After header, details.retryAfterMs).',
  500: 'internal_error (details.correlationId).',
  503: 'service_unavailable: the database is unavailable or did not answer in time; retry after the Retry-After header (seconds).',
};

/** The OpenAPI response of one error status (the `swagger/apiResponse` metadata entry ApiErrors writes). */
export function errorResponse(status: number): { description: string; schema: ReturnType<typeof protocolSchemaRef> } {
  return { description: DESCRIPTIONS[status] ?? 'Error.', schema: protocolSchemaRef('ErrorEnvelope') };
}

/** Declares the error answers of a route; all of them share the one ErrorEnvelope schema. */
export function ApiErrors(...statuses: number[]) {
  const all = [...new Set([...statuses, 429, 500, 503])].sort();
  return applyDecorators(
    ...all.map((status) => ApiResponse({ status, ...errorResponse(status) })),
  );
}
