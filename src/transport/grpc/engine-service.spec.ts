import { peerAddress } from './engine-service';

describe('peerAddress', () => {
  it('is the client address of a grpc-js peer string', () => {
    expect(peerAddress('127.0.0.1:50123')).toBe('127.0.0.1');
    expect(peerAddress('::1:50123')).toBe('::1');
    expect(peerAddress('[::1]:50123')).toBe('::1');
    expect(peerAddress('::ffff:10.1.2.3:50123')).toBe('10.1.2.3');
    expect(peerAddress('unknown')).toBe('unknown');
  });
});
