import type { Root, Type } from 'protobufjs';
import { GrpcStatus } from './grpc-status';

/** The canonical error envelope (error-envelope.schema.json). */
export interface ErrorEnvelope {
  error: string;
  message: string;
  details?: Record<string, unknown>;
}

/** google.rpc.Status in protobufjs' object form (keepCase). */
export interface RpcStatus {
  code: number;
  message: string;
  details: Array<{ type_url: string; value: Uint8Array }>;
}

/** The type_url under which a status detail carries the envelope's JSON bytes. */
export const ERROR_ENVELOPE_TYPE_URL = 'openwop.dev/spec/v1/ErrorEnvelope';

/** The transport profile's error mapping table (grpc-transport.md §"Error mapping"), by envelope code. */
export const ERROR_CODE_TO_GRPC: Readonly<Record<string, GrpcStatus>> = {
  unauthenticated: GrpcStatus.UNAUTHENTICATED,
  key_expired: GrpcStatus.UNAUTHENTICATED,
  key_revoked: GrpcStatus.UNAUTHENTICATED,
  forbidden: GrpcStatus.PERMISSION_DENIED,
  validation_error: GrpcStatus.INVALID_ARGUMENT,
  not_found: GrpcStatus.NOT_FOUND,
  run_not_found: GrpcStatus.NOT_FOUND,
  workflow_not_found: GrpcStatus.NOT_FOUND,
  // Run de-duplication is ALREADY_EXISTS; idempotency conflicts are ABORTED.
  run_already_active: GrpcStatus.ALREADY_EXISTS,
  idempotency_key_conflict: GrpcStatus.ABORTED,
  idempotency_key_mismatch: GrpcStatus.ABORTED,
  recursion_limit_exceeded: GrpcStatus.RESOURCE_EXHAUSTED,
  // gRPC has no 429: RESOURCE_EXHAUSTED with `retry-after` in the trailers.
  rate_limited: GrpcStatus.RESOURCE_EXHAUSTED,
  capability_not_provided: GrpcStatus.FAILED_PRECONDITION,
  capability_required: GrpcStatus.FAILED_PRECONDITION,
  credential_required: GrpcStatus.FAILED_PRECONDITION,
  credential_forbidden: GrpcStatus.FAILED_PRECONDITION,
  credential_unavailable: GrpcStatus.FAILED_PRECONDITION,
  internal_error: GrpcStatus.INTERNAL,
};

/**
 * For codes the table does not name (the host's own, such as connection_pack_too_large), the HTTP
 * status the REST surface answers with decides, following google.rpc.Code's HTTP mapping.
 */
function grpcCodeForHttpStatus(http: number): GrpcStatus {
  switch (http) {
    case 400:
    case 415:
      return GrpcStatus.INVALID_ARGUMENT;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
    case 410:
      return GrpcStatus.NOT_FOUND;
    case 409:
      return GrpcStatus.ABORTED;
    case 413:
    case 429:
      return GrpcStatus.RESOURCE_EXHAUSTED;
    case 499:
      return GrpcStatus.CANCELLED;
    case 501:
      return GrpcStatus.UNIMPLEMENTED;
    case 503:
      return GrpcStatus.UNAVAILABLE;
    case 504:
      return GrpcStatus.DEADLINE_EXCEEDED;
  }
  if (http >= 400 && http < 500) return GrpcStatus.FAILED_PRECONDITION;
  if (http >= 500 && http < 600) return GrpcStatus.INTERNAL;
  return GrpcStatus.UNKNOWN;
}

/** The gRPC status code for an envelope: the profile's table first, else the REST HTTP status. */
export function grpcCodeForError(error: string, httpStatus?: number): GrpcStatus {
  const mapped = Object.prototype.hasOwnProperty.call(ERROR_CODE_TO_GRPC, error) ? ERROR_CODE_TO_GRPC[error] : undefined;
  if (mapped !== undefined) return mapped;
  return httpStatus === undefined ? GrpcStatus.UNKNOWN : grpcCodeForHttpStatus(httpStatus);
}

/** The status a failed call ends with: the mapped code, the envelope's message, the whole envelope in details[]. */
export function errorEnvelopeToStatus(envelope: ErrorEnvelope, opts: { httpStatus?: number; code?: GrpcStatus } = {}): RpcStatus {
  const body: ErrorEnvelope = { error: envelope.error, message: envelope.message, ...(envelope.details !== undefined ? { details: envelope.details } : {}) };
  return {
    code: opts.code ?? grpcCodeForError(envelope.error, opts.httpStatus),
    message: envelope.message,
    details: [{ type_url: ERROR_ENVELOPE_TYPE_URL, value: Buffer.from(JSON.stringify(body), 'utf8') }],
  };
}

/** The envelope a status carries, if it carries one (clients branch on it rather than on the message). */
export function errorEnvelopeFromStatus(s: Pick<RpcStatus, 'details'>): ErrorEnvelope | undefined {
  const detail = (s.details ?? []).find((d) => d.type_url === ERROR_ENVELOPE_TYPE_URL);
  if (!detail) return undefined;
  const parsed: unknown = JSON.parse(Buffer.from(detail.value).toString('utf8'));
  if (typeof parsed !== 'object' || parsed === null || typeof (parsed as ErrorEnvelope).error !== 'string' || typeof (parsed as ErrorEnvelope).message !== 'string') {
    throw new Error(`the ${ERROR_ENVELOPE_TYPE_URL} status detail is not an error envelope`);
  }
  return parsed as ErrorEnvelope;
}

function statusType(root: Root): Type {
  return root.lookupType('google.rpc.Status');
}

/** google.rpc.Status bytes, as the `grpc-status-details-bin` trailer carries them. */
export function encodeRpcStatus(root: Root, s: RpcStatus): Buffer {
  const type = statusType(root);
  return Buffer.from(type.encode(type.fromObject(s)).finish());
}

export function decodeRpcStatus(root: Root, bytes: Uint8Array): RpcStatus {
  const type = statusType(root);
  const o = type.toObject(type.decode(bytes), { defaults: true, arrays: true }) as { code: number; message: string; details: Array<{ type_url: string; value: Uint8Array }> };
  return { code: o.code, message: o.message, details: o.details.map((d) => ({ type_url: d.type_url, value: d.value })) };
}
