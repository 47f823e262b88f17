import pino, { DestinationStream, Logger } from 'pino';
import { createLogger, LOGGER_OPTIONS } from './logger';

/** A destination keeping each line written, its time made constant (the two loggers write at different instants). */
function lines(): DestinationStream & { out: string[] } {
  const out: string[] = [];
  return { out, write: (s: string) => void out.push(s.replace(/"time":"[^"]+"/, '"time":"T"')) };
}

class Failure extends Error {
  token = 'error-own-token';
  code = 'E_FAIL';
}
/** One error for both loggers (its stack names where it was made). */
const failure = new Failure('it failed');

/** What every test logs: primitives of each kind, every redacted path, nested and listed secrets, an error, bindings. */
function logAll(log: Logger): void {
  log.info({ n: 1, f: 1.5, b: true, z: null, nan: NaN, inf: Infinity, u: undefined }, 'primitives');
  log.info({ s: 'quote " back \\ newline \n tab \t line-separator \u2028 control \u0001 lone \ud800 emoji 😀 é' }, 'strings');
  log.info({ authorization: 'Bearer top', headers: { authorization: 'Bearer headers', accept: 'json' } }, 'top');
  log.info({ req: { headers: { authorization: 'Bearer req', cookie: 'sid=req', accept: 'json' }, method: 'GET' } }, 'req');
  log.info({ conn: { credential: 'c1', password: 'p1', secret: 's1', apiKey: 'k1', token: 't1', name: 'kept' }, other: { token: 't2' } }, 'nested');
  log.info({ deep: { inner: { token: 'depth-two' } }, list: [{ token: 'in-a-list' }], token: 'top-level-token' }, 'beyond the paths');
  log.info({ err: failure }, 'error');
  log.info('no object');
  log.child({ reqId: 'r-1', context: 'ctx' }).info({ status: 200, route: '/v1/runs' }, 'child');
  log.child({ plugin: { token: 'binding-token', id: 'p' } }).warn({ x: 1 }, 'object binding');
}

describe('the host logger', () => {
  it("writes every line byte for byte as pino's own redaction of the same paths does", () => {
    const reference = lines();
    logAll(pino({ level: 'info', ...LOGGER_OPTIONS }, reference));
    const host = lines();
    logAll(createLogger('info', host));
    expect(host.out).toHaveLength(10);
    expect(host.out).toEqual(reference.out);
  });

  it('redacts every path it declares, in objects, nested objects, errors and bindings', () => {
    const host = lines();
    logAll(createLogger('info', host));
    const text = host.out.join('');
    for (const secret of ['Bearer top', 'Bearer headers', 'Bearer req', 'sid=req', 'c1', 'p1', 's1', 'k1', 't1', 't2', 'error-own-token', 'binding-token']) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain('"name":"kept"');
    expect(text).toContain('"accept":"json"');
    const nested = JSON.parse(host.out[4]) as { conn: Record<string, string> };
    expect(nested.conn).toEqual({ credential: '[REDACTED]', password: '[REDACTED]', secret: '[REDACTED]', apiKey: '[REDACTED]', token: '[REDACTED]', name: 'kept' });
  });

  it('does not change what it was given', () => {
    const given = { conn: { token: 't1' }, req: { headers: { authorization: 'Bearer req' } } };
    createLogger('info', lines()).info(given, 'line');
    expect(given).toEqual({ conn: { token: 't1' }, req: { headers: { authorization: 'Bearer req' } } });
  });

  it('sends only objects through the redactor', () => {
    const root = createLogger('info', lines());
    // A request's logger is a child (Fastify's, with its request id): it shares its root's.
    for (const log of [root, root.child({ reqId: 'r-1' })] as unknown as Array<Record<symbol, Record<symbol, { name: string }>>>) {
      expect(log[pino.symbols.stringifiersSym][pino.symbols.wildcardFirstSym].name).toBe('redactObjects');
    }
  });
});
