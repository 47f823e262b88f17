/**
 * The errors a command or a start can end with, in a module that imports nothing, so the command line
 * can name them without loading the host.
 */

/** A start that cannot complete; `phase` says which step failed, the message fits on one line. */
export class StartupError extends Error {
  constructor(
    readonly phase: 'database' | 'migrations' | 'plugins' | 'application' | 'listen',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StartupError';
  }
}

/** The reason of an error on one line (driver errors can be empty AggregateErrors or span lines). */
export function oneLineReason(e: unknown): string {
  const err = e as { message?: unknown; code?: unknown; errors?: unknown[] } | undefined;
  let text = typeof err?.message === 'string' ? err.message : String(e);
  if (!text && Array.isArray(err?.errors) && err.errors.length) text = oneLineReason(err.errors[0]);
  if (!text && typeof err?.code === 'string') text = err.code;
  text = text.replace(/\s*\n\s*/g, ' ').trim();
  return text.length > 500 ? `${text.slice(0, 497)}...` : text || 'unknown error';
}
