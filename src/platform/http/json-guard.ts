import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DomainError, ValidationError } from '../errors/domain-error';
import type { JsonLimits } from '../config/host-config';

/**
 * The shape guard every JSON body and query passes before any handler, pipe or recursive helper
 * (canonicalization, credential scans, schema validation) sees it. Replacing Fastify's JSON parser
 * covers every route, present and future, in one place:
 *
 * 1. nesting deeper than `maxDepth` is refused from the raw text, before anything is built (400);
 * 2. the text is parsed by Fastify's own secure parser (`__proto__` keys and `constructor.prototype`
 *    are refused, 400);
 * 3. one iterative walk refuses objects with more than `maxKeys` properties, arrays with more than
 *    `maxItems` elements, strings longer than `maxStringLength` (413), and NUL characters or lone
 *    UTF-16 surrogates in any key or string (400: PostgreSQL cannot store either), and numbers too
 *    large for a double (`1e400` parses to Infinity, which has no JSON form: 400).
 */

export class PayloadTooLargeError extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('payload_too_large', 413, message, details);
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function pointer(path: readonly (string | number)[]): string {
  return path.map((p) => `/${String(p).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/**
 * The size limit a 413 names in its details (`limit`, `maximum`): no discovery key advertises these
 * (the v1 `limits` object is closed), so the refusal itself says which one was exceeded and by what.
 */
type SizeLimit = { limit: 'maxStringLength' | 'maxKeys' | 'maxItems'; maximum: number };

/** Why a string may not enter the host, or undefined. */
function badText(s: string, limits: JsonLimits): { status: 400 | 413; reason: string; cap?: SizeLimit } | undefined {
  if (s.length > limits.maxStringLength) return { status: 413, reason: `is longer than ${limits.maxStringLength} characters`, cap: { limit: 'maxStringLength', maximum: limits.maxStringLength } };
  if (s.includes('\u0000')) return { status: 400, reason: 'contains a NUL character' };
  if (LONE_SURROGATE.test(s)) return { status: 400, reason: 'contains a lone UTF-16 surrogate' };
  return undefined;
}

function nonFinite(v: unknown): boolean {
  return typeof v === 'number' && !Number.isFinite(v);
}

function refuse(status: 400 | 413, message: string, where: string, cap?: SizeLimit): never {
  const details = { path: where || '/' };
  if (status === 413) throw new PayloadTooLargeError(message, { ...details, ...cap });
  throw new ValidationError(message, details);
}

/**
 * Deepest nesting of `{`/`[` in JSON text, scanning once without building anything; stops as soon
 * as `limit` is exceeded. Brackets inside strings do not count.
 */
export function jsonTextDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > limit) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return false;
}

interface Frame {
  v: unknown;
  /** Containers enclosing this value (the root has none). */
  depth: number;
  parent?: Frame;
  key?: string | number;
}

function framePointer(f: Frame | undefined): string {
  const path: (string | number)[] = [];
  for (let cur = f; cur && cur.key !== undefined; cur = cur.parent) path.push(cur.key);
  return pointer(path.reverse());
}

/**
 * Checks a parsed JSON value against the limits with an explicit stack (no recursion; each frame links
 * to its parent, so the path is only spelled out for the refusal). Throws 400/413.
 */
export function assertJsonWithinLimits(value: unknown, limits: JsonLimits): void {
  const stack: Frame[] = [{ v: value, depth: 0 }];
  while (stack.length) {
    const f = stack.pop()!;
    const v = f.v;
    if (typeof v === 'string') {
      const bad = badText(v, limits);
      if (bad) refuse(bad.status, `A string in the JSON body ${bad.reason}.`, framePointer(f), bad.cap);
      continue;
    }
    if (typeof v === 'number') {
      // `1e400` parses to Infinity: no JSON text, no canonical form, no column can hold it.
      if (!Number.isFinite(v)) refuse(400, 'A number in the JSON body is out of range (it is not a finite double).', framePointer(f));
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (f.depth + 1 > limits.maxDepth) refuse(400, `The JSON body nests deeper than ${limits.maxDepth} levels.`, framePointer(f));
    if (Array.isArray(v)) {
      if (v.length > limits.maxItems) refuse(413, `An array in the JSON body has more than ${limits.maxItems} elements.`, framePointer(f), { limit: 'maxItems', maximum: limits.maxItems });
      for (let i = v.length - 1; i >= 0; i--) {
        const child: unknown = v[i];
        if (child !== null && (typeof child === 'object' || typeof child === 'string' || nonFinite(child))) stack.push({ v: child, depth: f.depth + 1, parent: f, key: i });
      }
      continue;
    }
    const keys = Object.keys(v);
    if (keys.length > limits.maxKeys) refuse(413, `An object in the JSON body has more than ${limits.maxKeys} properties.`, framePointer(f), { limit: 'maxKeys', maximum: limits.maxKeys });
    for (const k of keys) {
      const bad = badText(k, limits);
      if (bad) refuse(bad.status, `A property name in the JSON body ${bad.reason}.`, framePointer(f), bad.cap);
      const child = (v as Record<string, unknown>)[k];
      if (child !== null && (typeof child === 'object' || typeof child === 'string' || nonFinite(child))) stack.push({ v: child, depth: f.depth + 1, parent: f, key: k });
    }
  }
}

/** Checks the query string and path parameters: strings only, so no depth, but the same text and size rules. */
export function assertRequestParamsWithinLimits(request: Pick<FastifyRequest, 'query' | 'params'>, limits: JsonLimits): void {
  for (const [where, bag] of [['query', request.query], ['path', request.params]] as const) {
    if (!bag || typeof bag !== 'object') continue;
    const entries = Object.entries(bag as Record<string, unknown>);
    if (entries.length > limits.maxKeys) refuse(413, `The ${where} has more than ${limits.maxKeys} parameters.`, where, { limit: 'maxKeys', maximum: limits.maxKeys });
    for (const [name, raw] of entries) {
      const badName = badText(name, limits);
      if (badName) refuse(badName.status, `A ${where} parameter name ${badName.reason}.`, where, badName.cap);
      const values = Array.isArray(raw) ? raw : [raw];
      if (values.length > limits.maxItems) refuse(413, `The ${where} parameter "${name}" repeats more than ${limits.maxItems} times.`, `${where}.${name}`, { limit: 'maxItems', maximum: limits.maxItems });
      for (const value of values) {
        if (typeof value !== 'string') continue;
        const bad = badText(value, limits);
        if (bad) refuse(bad.status, `The ${where} parameter "${name}" ${bad.reason}.`, `${where}.${name}`, bad.cap);
      }
    }
  }
}

/**
 * Installs the guard on a Fastify instance: the JSON content-type parser (bodies) and a
 * preValidation hook (query and path parameters), both ahead of Nest's guards, pipes and handlers.
 */
export function installJsonGuard(fastify: FastifyInstance, limits: JsonLimits): void {
  const secureParse = fastify.getDefaultJsonParser('error', 'error');
  // Only JSON is spoken: other bodies (including text/plain, which Fastify parses by default) answer 415.
  fastify.removeContentTypeParser(['application/json', 'text/plain']);
  // SCIM 2.0 clients send application/scim+json (RFC 7644 §3.1): JSON, held to the same limits.
  fastify.addContentTypeParser(['application/json', 'application/scim+json'], { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    // Kept as received: artifacts are stored byte for byte (see verbatim-json.interceptor).
    (request as typeof request & { rawBody?: string }).rawBody = text;
    if (jsonTextDepthExceeds(text, limits.maxDepth)) {
      done(new ValidationError(`The JSON body nests deeper than ${limits.maxDepth} levels.`, { maxDepth: limits.maxDepth }), undefined);
      return;
    }
    secureParse(request, text, (err, parsed) => {
      if (err) {
        done(err, undefined);
        return;
      }
      try {
        assertJsonWithinLimits(parsed, limits);
      } catch (e) {
        done(e as Error, undefined);
        return;
      }
      done(null, parsed);
    });
  });
  fastify.addHook('preValidation', async (request) => {
    assertRequestParamsWithinLimits(request, limits);
  });
}
