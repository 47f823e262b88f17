import type { status } from '@grpc/grpc-js';

/**
 * The gRPC status codes (google.rpc.Code, fixed by the gRPC specification), as grpc-js numbers
 * them. Held here so that the transport's tables and metrics need not load grpc-js: a host whose
 * gRPC port is off never loads it (grpc-status.spec.ts holds these against grpc-js's own enum).
 */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const satisfies Record<keyof typeof status, status>;

export type GrpcStatus = (typeof GrpcStatus)[keyof typeof GrpcStatus];

const NAMES: ReadonlyMap<number, string> = new Map(Object.entries(GrpcStatus).map(([name, code]) => [code, name]));

/** A code's name as gRPC tooling prints it (OK, NOT_FOUND, ...); undefined for a number that is no code. */
export function grpcStatusName(code: number): string | undefined {
  return NAMES.get(code);
}
