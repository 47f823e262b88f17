import { createHash } from 'node:crypto';
import { ValidationError } from '../errors/domain-error';
import { UUID } from '../ids';

/**
 * What a cursor is valid for: one list (route), one caller tenant·workspace, one set of filters.
 * A cursor presented anywhere else is refused (400), so it never positions a query over rows of
 * another tenant, workspace or filter. The query itself is always filtered by the caller's tenant.
 */
export interface CursorBinding {
  list: string;
  tenant: string;
  workspace?: string;
  filters?: Record<string, string | number | boolean | undefined>;
}

/** The type of each component of a cursor's position, checked before it reaches SQL. */
export type KeyType = 'timestamptz' | 'uuid' | 'text' | 'int';

const VERSION = 1;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{6})Z$/;

function bindingHash(b: CursorBinding): string {
  const filters = Object.entries(b.filters ?? {})
    .filter(([, v]) => v !== undefined)
    .sort(([a], [c]) => (a < c ? -1 : a > c ? 1 : 0));
  return createHash('sha256')
    .update(JSON.stringify([VERSION, b.list, b.tenant, b.workspace ?? null, filters]))
    .digest('base64url')
    .slice(0, 22);
}

/** An opaque, URL-safe cursor for the position `key` (the sort key of the last item served). */
export function encodeCursor(binding: CursorBinding, key: string[]): string {
  return Buffer.from(JSON.stringify({ v: VERSION, b: bindingHash(binding), k: key }), 'utf8').toString('base64url');
}

function invalid(reason: string): never {
  throw new ValidationError(`cursor is not valid here: ${reason}. Use the nextCursor this route returned, with the same filters.`, { fields: ['cursor'] });
}

function validTimestamp(v: string): boolean {
  const m = TIMESTAMP.exec(v);
  if (!m) return false;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number);
  const t = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  return t.getUTCFullYear() === y && t.getUTCMonth() === mo - 1 && t.getUTCDate() === d && t.getUTCHours() === h && t.getUTCMinutes() === mi && t.getUTCSeconds() === s;
}

function validKey(type: KeyType, v: unknown): boolean {
  if (typeof v !== 'string' || v.length > 1000) return false;
  switch (type) {
    case 'timestamptz':
      return validTimestamp(v);
    case 'uuid':
      return UUID.test(v);
    case 'int':
      return /^-?\d{1,15}$/.test(v);
    case 'text':
      return !v.includes('\u0000') && !LONE_SURROGATE.test(v);
  }
}

/** The position a cursor encodes; 400 validation_error when it is malformed or bound to another list, caller or filter. */
export function decodeCursor(token: string, binding: CursorBinding, types: readonly KeyType[]): string[] {
  if (!/^[A-Za-z0-9_-]+$/.test(token)) invalid('malformed');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    invalid('malformed');
  }
  const c = parsed as { v?: unknown; b?: unknown; k?: unknown };
  if (!c || typeof c !== 'object' || c.v !== VERSION || typeof c.b !== 'string' || !Array.isArray(c.k)) invalid('malformed');
  if (c.b !== bindingHash(binding)) invalid('it belongs to another list, caller or filter');
  const key = c.k as unknown[];
  if (key.length !== types.length || !key.every((v, i) => validKey(types[i], v))) invalid('malformed position');
  return key as string[];
}
