import Ajv2020, { FuncKeywordDefinition, ValidateFunction } from 'ajv/dist/2020';
import type { SchemaValidateFunction } from 'ajv/dist/types';
import addFormats from 'ajv-formats';
import { linearRegExp, MatchBudgetExceeded, patternProblem, withMatchBudget } from './linear-regexp';
import { SchemaViolation, toViolations } from './schema-registry';

/**
 * JSON Schemas written by tenants and plugin authors rather than by the host: the questions of a
 * `core.clarification` node, the `parameters` (input schema) of a workflow chain, a goal's
 * completion criteria, the resume schema of an interrupt. They are compiled here and only here, by
 * Ajv instances built with `createAuthorAjv`: patterns run on the linear-time engine of
 * `linear-regexp.ts` (never a backtracking one), `uniqueItems` compares items by their canonical
 * text (linear, where Ajv compares every pair of objects), and every validation is held to a
 * budget of pattern matching. The host's own schemas (`SchemaRegistry`) are not author-supplied.
 */

/** One reason a schema cannot be used: where in the schema (a JSON Pointer, '' is the schema itself) and why. */
export interface SchemaProblem {
  path: string;
  message: string;
}

/** Thrown by `AuthorSchemas.compile` for a schema that does not compile here. */
export class SchemaNotCompiled extends Error {
  constructor(readonly problems: SchemaProblem[]) {
    super(`the schema does not compile: ${problems.map((p) => `${p.path || '/'}: ${p.message}`).join('; ')}`);
    this.name = 'SchemaNotCompiled';
  }
}

/** Validates a value against a compiled author schema: its violations (empty when valid). */
export type AuthorValidator = (value: unknown) => SchemaViolation[];

/** The canonical text of a JSON value: equal values (objects in any key order) have the same text. */
function itemKey(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'undefined';
  let s: string;
  if (Array.isArray(v)) {
    s = '[';
    for (let i = 0; i < v.length; i++) s += (i ? ',' : '') + itemKey(v[i]);
    return `${s}]`;
  }
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length > 1) keys.sort();
  s = '{';
  for (let i = 0; i < keys.length; i++) s += `${i ? ',' : ''}${JSON.stringify(keys[i])}:${itemKey(o[keys[i]])}`;
  return `${s}}`;
}

/** `uniqueItems` by canonical text in one pass (Ajv's own compares every pair of object items). */
const uniqueItems: SchemaValidateFunction = function uniqueItemsByText(schema: boolean, data: unknown[]): boolean {
  if (!schema) return true;
  const seen = new Map<string, number>();
  for (let i = 0; i < data.length; i++) {
    const key = itemKey(data[i]);
    const j = seen.get(key);
    if (j !== undefined) {
      uniqueItems.errors = [{ keyword: 'uniqueItems', message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`, params: { i, j } }];
      return false;
    }
    seen.set(key, i);
  }
  return true;
};
const UNIQUE_ITEMS: FuncKeywordDefinition = { keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', errors: true, validate: uniqueItems };

/**
 * The one way the host builds an Ajv for schemas it did not write (draft 2020-12, formats checked,
 * unknown keywords ignored). Schemas with an `$id` are not kept: compiling two schemas of one `$id`
 * is not a conflict.
 */
export function createAuthorAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true, addUsedSchema: false, logger: false, code: { regExp: linearRegExp } });
  addFormats(ajv);
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword(UNIQUE_ITEMS);
  return ajv;
}

const MAP_KEYWORDS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies'];
const SCHEMA_KEYWORDS = ['additionalProperties', 'items', 'additionalItems', 'contains', 'not', 'if', 'then', 'else', 'propertyNames', 'unevaluatedItems', 'unevaluatedProperties', 'contentSchema'];
const LIST_KEYWORDS = ['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items'];
const MAX_DEPTH = 64;

const pointer = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** The patterns of `schema` the linear-time engine refuses, each at its path. */
function patternProblems(schema: unknown, path: string, out: SchemaProblem[], depth = 0): void {
  if (!isObject(schema)) return;
  if (depth > MAX_DEPTH) {
    out.push({ path, message: `nests more than ${MAX_DEPTH} schemas deep` });
    return;
  }
  if (typeof schema.pattern === 'string') {
    const problem = patternProblem(schema.pattern);
    if (problem) out.push({ path: `${path}/pattern`, message: problem });
  }
  if (isObject(schema.patternProperties)) {
    for (const key of Object.keys(schema.patternProperties)) {
      const problem = patternProblem(key);
      if (problem) out.push({ path: `${path}/patternProperties/${pointer(key)}`, message: problem });
    }
  }
  for (const k of MAP_KEYWORDS) {
    const m = schema[k];
    if (isObject(m)) for (const [name, sub] of Object.entries(m)) patternProblems(sub, `${path}/${k}/${pointer(name)}`, out, depth + 1);
  }
  for (const k of SCHEMA_KEYWORDS) patternProblems(schema[k], `${path}/${k}`, out, depth + 1);
  for (const k of LIST_KEYWORDS) {
    const list = schema[k];
    if (Array.isArray(list)) list.forEach((sub, i) => patternProblems(sub, `${path}/${k}/${i}`, out, depth + 1));
  }
}

function withoutId(schema: Record<string, unknown>): Record<string, unknown> {
  const { $id: _id, ...rest } = schema;
  return rest;
}

/** How many compiled schemas are kept (by their canonical text); the cache starts over past it. */
const CACHE_SIZE = 500;

/**
 * Compiles author schemas (cached by their canonical text) and answers, for one that does not compile,
 * every problem with its path: a pattern the linear-time engine refuses, a violation of the JSON
 * Schema meta-schema (`{type: "bogus"}`), an unresolvable `$ref`.
 */
export class AuthorSchemas {
  private static instance?: AuthorSchemas;
  private built?: ReturnType<typeof createAuthorAjv>;
  private readonly compiled = new Map<string, AuthorValidator | SchemaProblem[]>();

  static shared(): AuthorSchemas {
    return (AuthorSchemas.instance ??= new AuthorSchemas());
  }

  /** Made on first use: services hold the shared instance from their construction, at every boot. */
  private get ajv(): ReturnType<typeof createAuthorAjv> {
    return (this.built ??= createAuthorAjv());
  }

  /** Why `schema` cannot be used (empty: it compiles). */
  problems(schema: unknown): SchemaProblem[] {
    const r = this.entry(schema);
    return Array.isArray(r) ? r : [];
  }

  /** The validator of `schema`; throws SchemaNotCompiled when it does not compile. */
  compile(schema: unknown): AuthorValidator {
    const r = this.entry(schema);
    if (Array.isArray(r)) throw new SchemaNotCompiled(r);
    return r;
  }

  private entry(schema: unknown): AuthorValidator | SchemaProblem[] {
    // Canonical text: a schema read back from a jsonb column (keys reordered) is the one compiled before.
    const key = itemKey(schema);
    let r = this.compiled.get(key);
    if (!r) {
      r = this.build(schema);
      if (this.compiled.size >= CACHE_SIZE) this.compiled.clear();
      this.compiled.set(key, r);
    }
    return r;
  }

  private build(schema: unknown): AuthorValidator | SchemaProblem[] {
    if (!isObject(schema) && typeof schema !== 'boolean') return [{ path: '', message: 'must be a JSON Schema (an object or a boolean)' }];
    const problems: SchemaProblem[] = [];
    patternProblems(schema, '', problems);
    try {
      if (!this.ajv.validateSchema(schema)) {
        for (const v of toViolations(this.ajv.errors ?? [])) {
          if (!problems.some((p) => p.path === v.path)) problems.push({ path: v.path, message: v.message });
        }
      }
    } catch (e) {
      problems.push({ path: isObject(schema) && schema.$schema !== undefined ? '/$schema' : '', message: (e as Error).message });
    }
    if (problems.length) return problems;
    let fn: ValidateFunction;
    try {
      // The root's $id only names the schema here (an `urn:` one would not even resolve): compiled without it.
      fn = this.ajv.compile(isObject(schema) && '$id' in schema ? withoutId(schema) : schema);
    } catch (e) {
      return [{ path: '', message: (e as Error).message }];
    } finally {
      this.ajv.removeSchema(); // nothing compiled is kept by Ajv (the validator is kept here)
    }
    return (value) => {
      try {
        return withMatchBudget(() => fn(value)) ? [] : toViolations(fn.errors ?? []);
      } catch (e) {
        if (e instanceof MatchBudgetExceeded) return [{ path: '', message: e.message, keyword: 'pattern' }];
        throw e;
      }
    };
  }
}
