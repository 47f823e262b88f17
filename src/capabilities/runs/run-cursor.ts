import { ValidationError } from '../../platform/errors/domain-error';

/**
 * The opaque keyset cursor of `GET /v1/runs`: base64url of `[createdAt, runId]` of the last run of
 * a page (newest first). `createdAt` keeps the database's microseconds, so no run is skipped or
 * repeated between pages. Self-contained so a shared pagination helper can replace it.
 */
export interface RunCursor {
  createdAt: string;
  runId: string;
}

const TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function encodeRunCursor(c: RunCursor): string {
  return Buffer.from(JSON.stringify([c.createdAt, c.runId]), 'utf8').toString('base64url');
}

/** Decodes a cursor; anything this host did not issue is 400 `validation_error`. */
export function decodeRunCursor(raw: string): RunCursor {
  const bad = () => new ValidationError('The cursor is not one this host issued.', { field: 'cursor' });
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(raw)) throw bad();
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(v) || v.length !== 2 || typeof v[0] !== 'string' || typeof v[1] !== 'string' || !TS.test(v[0]) || !UUID.test(v[1])) throw bad();
  return { createdAt: v[0], runId: v[1] };
}
