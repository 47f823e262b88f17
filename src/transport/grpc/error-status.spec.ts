import { status as GrpcStatus } from '@grpc/grpc-js';
import { loadEngineRoot } from './engine-proto';
import {
  decodeRpcStatus,
  encodeRpcStatus,
  ERROR_CODE_TO_GRPC,
  ERROR_ENVELOPE_TYPE_URL,
  errorEnvelopeFromStatus,
  errorEnvelopeToStatus,
  grpcCodeForError,
} from './error-status';

// grpc-transport.md §"Error mapping", row by row.
const PROFILE_TABLE = [
  [['unauthenticated', 'key_expired', 'key_revoked'], 'UNAUTHENTICATED', 16],
  [['forbidden'], 'PERMISSION_DENIED', 7],
  [['validation_error'], 'INVALID_ARGUMENT', 3],
  [['not_found', 'run_not_found', 'workflow_not_found'], 'NOT_FOUND', 5],
  [['run_already_active'], 'ALREADY_EXISTS', 6],
  [['idempotency_key_conflict', 'idempotency_key_mismatch'], 'ABORTED', 10],
  [['recursion_limit_exceeded', 'rate_limited'], 'RESOURCE_EXHAUSTED', 8],
  [['capability_not_provided', 'capability_required'], 'FAILED_PRECONDITION', 9],
  [['credential_required', 'credential_forbidden', 'credential_unavailable'], 'FAILED_PRECONDITION', 9],
  [['internal_error'], 'INTERNAL', 13],
] as const;

describe('error envelope ↔ google.rpc.Status', () => {
  it.each(PROFILE_TABLE)('%j → %s (%i)', (codes, name, number) => {
    expect(GrpcStatus[name]).toBe(number);
    for (const code of codes) expect(grpcCodeForError(code, 418)).toBe(number);
  });

  it('the table holds exactly the profile rows', () => {
    expect(Object.keys(ERROR_CODE_TO_GRPC).sort()).toEqual(PROFILE_TABLE.flatMap(([codes]) => codes).sort());
  });

  it('maps other codes by the HTTP status REST answers with', () => {
    expect(grpcCodeForError('connection_pack_too_large', 413)).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    expect(grpcCodeForError('connection_provider_conflict', 409)).toBe(GrpcStatus.ABORTED);
    expect(grpcCodeForError('bounds_required', 422)).toBe(GrpcStatus.FAILED_PRECONDITION);
    expect(grpcCodeForError('worker_unavailable', 503)).toBe(GrpcStatus.UNAVAILABLE);
    expect(grpcCodeForError('engine_error', 500)).toBe(GrpcStatus.INTERNAL);
    expect(grpcCodeForError('not_implemented', 501)).toBe(GrpcStatus.UNIMPLEMENTED);
    expect(grpcCodeForError('whatever')).toBe(GrpcStatus.UNKNOWN);
    // An inherited name is not a table entry.
    expect(grpcCodeForError('constructor', 400)).toBe(GrpcStatus.INVALID_ARGUMENT);
  });

  it('carries the whole envelope as JSON bytes under the profile type_url, through google.rpc.Status bytes', () => {
    const envelope = { error: 'rate_limited', message: 'Rate limit exceeded for tenant t on /v1/runs.', details: { retryAfterMs: 12500, scope: 'tenant' } };
    const s = errorEnvelopeToStatus(envelope, { httpStatus: 429 });
    expect(s.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    expect(s.message).toBe(envelope.message);
    expect(s.details).toHaveLength(1);
    expect(s.details[0].type_url).toBe(ERROR_ENVELOPE_TYPE_URL);
    expect(JSON.parse(Buffer.from(s.details[0].value).toString('utf8'))).toEqual(envelope);

    const root = loadEngineRoot();
    const back = decodeRpcStatus(root, encodeRpcStatus(root, s));
    expect(back.code).toBe(8);
    expect(back.message).toBe(envelope.message);
    expect(errorEnvelopeFromStatus(back)).toEqual(envelope);
  });

  it('an explicit code wins, and an envelope without details stays without', () => {
    const s = errorEnvelopeToStatus({ error: 'capability_not_provided', message: 'Not served here.' }, { code: GrpcStatus.UNIMPLEMENTED });
    expect(s.code).toBe(GrpcStatus.UNIMPLEMENTED);
    expect(JSON.parse(Buffer.from(s.details[0].value).toString('utf8'))).toEqual({ error: 'capability_not_provided', message: 'Not served here.' });
  });

  it('finds no envelope in a status without one, and refuses a detail that is not an envelope', () => {
    expect(errorEnvelopeFromStatus({ details: [] })).toBeUndefined();
    expect(() => errorEnvelopeFromStatus({ details: [{ type_url: ERROR_ENVELOPE_TYPE_URL, value: Buffer.from('{"error":1}') }] })).toThrow(/not an error envelope/);
  });
});
