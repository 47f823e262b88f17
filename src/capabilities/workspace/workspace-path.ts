import { ValidationError } from '../../platform/errors/domain-error';

/** `workspace-file.schema.json#path`: a flat namespace with `/` in names, at most 256 characters. */
export const WORKSPACE_PATH_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$/;

/** A `?prefix=` of the list: the same characters, possibly empty, at most 256 of them. */
export const WORKSPACE_PREFIX_PATTERN = /^[A-Za-z0-9._/-]{0,256}$/;

/**
 * A path the store accepts, exactly as written: the schema's pattern, and normalized, so one file
 * has one spelling. The pattern alone lets `a/../b`, `a//b`, `a/./b` and `a/` through; none of them
 * is a file name here (the spec forbids `..` anywhere; the others name the same file as another
 * spelling would in a directory tree, which this namespace is not).
 */
export function workspacePath(raw: unknown): string {
  const bad = (why: string): never => {
    throw new ValidationError(`path ${why}.`, { fields: ['path'] });
  };
  if (typeof raw !== 'string' || raw === '') return bad('is required');
  if (!WORKSPACE_PATH_PATTERN.test(raw)) return bad('must be 1-256 letters, digits or . _ / -, starting with a letter or digit (no leading /)');
  if (raw.includes('..')) return bad('must not contain ".."');
  if (raw.endsWith('/')) return bad('must not end with "/"');
  if (raw.split('/').some((s) => s === '' || s === '.')) return bad('must not contain empty or "." segments');
  return raw;
}

/** The etag of a version: opaque to clients, unique per path because versions never repeat (a delete is a version too). */
export function etagOf(version: number): string {
  return `"v${version}"`;
}

/** One entity tag of an `If-Match` list: `"x"`, `W/"x"` (never matches: If-Match compares strongly) or a bare token. */
const TAG = /^(?:(W\/)?"([\x21\x23-\x7e]*)"|([\x21\x23-\x2b\x2d-\x7e]+))$/;

/**
 * `If-Match` / `If-None-Match` as `*` or the strong tags it lists. A value that is no list of
 * entity tags is `400 validation_error` rather than a guess at what it meant.
 */
export function parseEntityTags(header: string | undefined, name: string): '*' | string[] | undefined {
  if (header === undefined) return undefined;
  const bad = (): never => {
    throw new ValidationError(`${name} must be * or a comma-separated list of entity tags such as "v3" (at most 255 characters).`, { fields: [name] });
  };
  if (header.length > 255) return bad();
  const v = header.trim();
  if (v === '*') return '*';
  const items = v.split(',').map((s) => s.trim());
  if (!items.length || items.some((s) => s === '')) return bad();
  const strong: string[] = [];
  for (const item of items) {
    const m = TAG.exec(item);
    if (!m) return bad();
    if (m[1]) continue;
    strong.push(m[2] !== undefined ? `"${m[2]}"` : `"${m[3]}"`);
  }
  return strong;
}
