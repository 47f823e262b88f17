import { isDatabaseUnavailable } from './database-driver';

/** A Node system error as net sockets raise it (code, errno, syscall). */
function systemError(code: string, syscall: string): Error {
  return Object.assign(new Error(`${syscall} ${code}`), { code, errno: -104, syscall });
}

describe('isDatabaseUnavailable', () => {
  it('recognizes a reset, refused or broken database socket, bare or wrapped by TypeORM', () => {
    expect(isDatabaseUnavailable(systemError('ECONNRESET', 'read'))).toBe(true);
    expect(isDatabaseUnavailable(systemError('ECONNREFUSED', 'connect'))).toBe(true);
    expect(isDatabaseUnavailable(systemError('EPIPE', 'write'))).toBe(true);
    const wrapped = Object.assign(new Error('read ECONNRESET'), { name: 'QueryFailedError', driverError: systemError('ECONNRESET', 'read') });
    expect(isDatabaseUnavailable(wrapped)).toBe(true);
  });

  it('recognizes the SQLSTATEs of a server shutting down, starting or timing out', () => {
    expect(isDatabaseUnavailable(Object.assign(new Error('terminating connection'), { severity: 'FATAL', code: '57P01' }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('canceling statement'), { severity: 'ERROR', code: '57014' }))).toBe(true);
  });

  it('does not take a client that aborted its request body (no syscall), or an ordinary SQL error, for an outage', () => {
    expect(isDatabaseUnavailable(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))).toBe(false);
    expect(isDatabaseUnavailable(Object.assign(new Error('duplicate key'), { severity: 'ERROR', code: '23505' }))).toBe(false);
    expect(isDatabaseUnavailable(new Error('something else'))).toBe(false);
  });
});
