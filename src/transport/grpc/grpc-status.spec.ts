import { status } from '@grpc/grpc-js';
import { GrpcStatus, grpcStatusName } from './grpc-status';

describe('GrpcStatus', () => {
  it('is grpc-js’s status enum, name for name and number for number', () => {
    const theirs = Object.fromEntries(Object.entries(status).filter(([k]) => Number.isNaN(Number(k))));
    expect(GrpcStatus).toEqual(theirs);
    for (const [name, code] of Object.entries(theirs)) expect(grpcStatusName(code as number)).toBe(name);
    expect(grpcStatusName(17)).toBeUndefined();
  });
});
