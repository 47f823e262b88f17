import type { LoggerService } from '@nestjs/common';
import pino, { DestinationStream, Logger } from 'pino';

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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'openwop-host' },
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

/** Nest's logger interface over the same pino instance, so framework and host logs are one JSON stream. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly pino: Logger) {}

  private write(level: 'info' | 'error' | 'warn' | 'debug' | 'trace', message: unknown, rest: unknown[]): void {
    const context = typeof rest[rest.length - 1] === 'string' ? (rest[rest.length - 1] as string) : undefined;
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
