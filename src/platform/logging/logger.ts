import type { LoggerService } from '@nestjs/common';
import pino, { DestinationStream, LogFn, Logger } from 'pino';
import { WiringFault } from '../errors/internal-fault';

/** Paths never written to logs, whatever a caller passes in. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  '*.authorization',
  '*.credential',
  '*.password',
  '*.secret',
  '*.apiKey',
  '*.token',
];

/** Keys every line has of its own (level, time, msg; pid and hostname unless turned off). */
const LINE_KEYS: ReadonlySet<string> = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

/** A logger's bindings (service, reqId, context...), read once per logger, and only for a key it may bind. */
const boundKeys = new WeakMap<Logger, Record<string, unknown>>();

/**
 * Whether a line of `logger` already has `key`: one of the line's own, or a binding. A request's
 * logger is a child made for that request, so its bindings are not parsed for every line: they are
 * written as `,"key":value` in the child's chindings text, and only a key found there is confirmed
 * against the parsed bindings (a nested value can hold the same text).
 */
function isReserved(logger: Logger, key: string): boolean {
  if (LINE_KEYS.has(key)) return true;
  const chindings = (logger as unknown as Record<symbol, unknown>)[pino.symbols.chindingsSym];
  if (typeof chindings !== 'string' || !chindings.includes(`${JSON.stringify(key)}:`)) return false;
  let bindings = boundKeys.get(logger);
  if (!bindings) {
    bindings = logger.bindings();
    boundKeys.set(logger, bindings);
  }
  return Object.prototype.hasOwnProperty.call(bindings, key);
}

/**
 * pino writes a merging object's keys after the line's own (`level`, `time`, bindings) and its `msg`
 * after both, so `log.info({ msg: 'x' }, '')` or a field named like a binding gives a line with a key
 * twice: valid to JSON.parse (last wins), ambiguous to every log pipeline. Here a `msg` in the object
 * becomes the message (or `detail`, when a message is also given) and any other clashing key is
 * renamed with a trailing `_`, so every line has each key once.
 */
function dedupeKeys(this: Logger, args: Parameters<LogFn>, method: LogFn): void {
  const [first, ...rest] = args as unknown[];
  if (!first || typeof first !== 'object' || first instanceof Error) {
    (method as (...a: unknown[]) => void).apply(this, args as unknown[]);
    return;
  }
  const source = first as Record<string, unknown>;
  let obj: Record<string, unknown> | undefined;
  for (const key of Object.keys(source)) {
    if (!isReserved(this, key)) continue;
    obj ??= { ...source };
    const value = obj[key];
    delete obj[key];
    if (key === 'msg') {
      if (typeof rest[0] === 'string' && rest[0] !== '') obj.detail = value;
      else rest[0] = typeof value === 'string' ? value : JSON.stringify(value);
    } else {
      let renamed = `${key}_`;
      while (renamed in obj || isReserved(this, renamed)) renamed += '_';
      obj[renamed] = value;
    }
  }
  (method as (...a: unknown[]) => void).apply(this, [obj ?? source, ...rest]);
}

/** The options of the host's logger (createLogger), apart from its level. */
export const LOGGER_OPTIONS = {
  hooks: { logMethod: dedupeKeys },
  base: { service: 'openwop-host' },
  redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
  timestamp: pino.stdTimeFunctions.isoTime,
  formatters: { level: (label: string) => ({ level: label }) },
};

type Stringify = (value: unknown, safe?: unknown) => string | undefined;

/**
 * pino redacts the `*.<name>` paths (REDACT_PATHS) by running its redactor on every value of every
 * line and of every child's bindings, whatever its type: for a request's log line, a dozen calls that
 * each parse the six paths again (about a quarter of what the host allocated per request; a
 * request's line 10.4 µs, 4.3 µs with this: docs/benchmarks.md). Nothing can be redacted in a value that is not
 * an object, for which the redactor answers `JSON.stringify(value)`: that is answered here without
 * it, the same bytes. Objects still go through the redactor, and a key with a path of its own
 * (`authorization`, `req`, `headers`) through its own. Children share their root's stringifiers.
 */
function redactObjectsOnly(logger: Logger): Logger {
  const stringifiers = (logger as unknown as Record<symbol, Record<symbol, Stringify | undefined>>)[pino.symbols.stringifiersSym];
  const redactor = stringifiers?.[pino.symbols.wildcardFirstSym];
  if (!redactor) throw new WiringFault("pino's redaction of the *.<name> paths is not where the host's logger expects it (pino.symbols)");
  stringifiers[pino.symbols.wildcardFirstSym] = function redactObjects(value: unknown, safe?: unknown): string | undefined {
    return value !== null && typeof value === 'object' ? redactor(value, safe) : JSON.stringify(value);
  };
  return logger;
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return redactObjectsOnly(pino({ level, ...LOGGER_OPTIONS }, destination));
}

/** Nest contexts whose info lines (route mapping, module wiring) are logged at debug. */
const QUIET_CONTEXTS = new Set(['RoutesResolver', 'RouterExplorer', 'InstanceLoader']);

/** Nest's logger interface over the same pino instance, so framework and host logs are one JSON stream. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly pino: Logger) {}

  private write(requested: 'info' | 'error' | 'warn' | 'debug' | 'trace', message: unknown, rest: unknown[]): void {
    const context = typeof rest[rest.length - 1] === 'string' ? (rest[rest.length - 1] as string) : undefined;
    // Nest's per-route and per-module start-up lines are detail, not news: debug, not info.
    const level = requested === 'info' && context && QUIET_CONTEXTS.has(context) ? 'debug' : requested;
    if (message && typeof message === 'object' && !(message instanceof Error)) {
      const extra = typeof rest[0] === 'string' && rest.length > 1 ? rest[0] : undefined;
      this.pino[level]({ context, ...(message as Record<string, unknown>) }, extra ?? '');
      return;
    }
    if (message instanceof Error) {
      this.pino[level]({ context, err: message }, message.message);
      return;
    }
    this.pino[level]({ context }, String(message));
  }

  log(message: unknown, ...rest: unknown[]): void {
    this.write('info', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('trace', message, rest);
  }
}
