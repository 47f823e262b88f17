import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { HOST_NAME, HOST_VERSION } from '../discovery/discovery.service';
import { SchemaRegistry } from '../schemas/schema-registry';
import { PROTOCOL_SCHEMAS } from './protocol-schemas';
import { OPENAPI_TAGS } from './tags';

type Json = Record<string, unknown>;

/** What the document describes besides the mounted routes. */
export interface OpenApiDocumentOptions {
  /** The test seams (`/v1/host/sample/*`) are in the document only on a host that serves them. */
  testSeams: boolean;
}

/** The one credential scheme: an `Authorization: Bearer` header carrying an API key or a JWT. */
export const BEARER_DESCRIPTION =
  'Send `Authorization: Bearer <token>`. The token is either an **API key**, an opaque string minted by `POST /v1/keys` or the CLI (`owk_` followed by random characters with the default `OPENWOP_API_KEY_PREFIX`; shown once, stored hashed), or a **JWT** (`exp` required; HS256 with `OPENWOP_JWT_SECRET`, or RS256/ES256 from `OPENWOP_JWT_JWKS_URL`; tenant, workspace, principal, scope and role claims as configured). JWTs are refused when neither is configured. Each operation lists the scopes it needs in `x-required-scopes`.';

/**
 * Builds the host's OpenAPI 3.1 document from the mounted routes, deterministically: protocol
 * shapes are embedded from the official JSON Schemas, nullability is written the 3.1 way, and every
 * key is sorted so the committed copy can be compared byte for byte.
 */
export function buildOpenApiDocument(app: INestApplication, options: OpenApiDocumentOptions): Json {
  const config = new DocumentBuilder()
    .setTitle('OpenWOP host')
    .setDescription(
      'OpenWOP v1 host: runs, tool catalog (RFC 0078), connection packs (RFC 0095), reviewable-learning proposals (RFC 0096), standing goals (RFC 0097) and portability (RFC 0098). Every error answer is the canonical ErrorEnvelope; `x-required-scopes` lists the scopes an operation needs.',
    )
    .setVersion(HOST_VERSION)
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: BEARER_DESCRIPTION }, 'bearer')
    .build();
  const raw = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (controllerKey, methodKey) => `${controllerKey}_${methodKey}`,
  }) as unknown as Json;
  return postProcess(raw, options);
}

/**
 * The rules every operation gets, whoever wrote its route: they are applied here rather than on
 * each route so a new capability's routes comply when the document is regenerated.
 */
export function postProcess(doc: Json, options: OpenApiDocumentOptions): Json {
  doc.openapi = '3.1.0';
  (doc.info as Json)['x-implementation'] = HOST_NAME;
  const info = doc.info as Json;
  info.license = { name: 'Apache-2.0', identifier: 'Apache-2.0' };
  // Nest writes an empty contact; a self-hosted host has no one contact to name.
  if (info.contact && !Object.keys(info.contact as Json).length) delete info.contact;
  // Relative: the document describes the host that serves it, wherever it is deployed.
  doc.servers = [{ url: '/', description: 'The host serving this document.' }];
  const components = ((doc.components as Json) ??= {});
  const schemas = ((components.schemas as Json) ??= {});
  const registry = SchemaRegistry.shared();
  for (const [component, name] of Object.entries(PROTOCOL_SCHEMAS)) {
    embedProtocolSchema(schemas, component, loadRaw(registry, name));
  }
  if (!options.testSeams) {
    const unusedBefore = unreferencedSchemas(doc);
    dropSeams(doc);
    // The bodies only seams used go with them.
    for (const name of unreferencedSchemas(doc)) if (!unusedBefore.has(name)) delete schemas[name];
  }
  convertNullable(doc);
  markSeams(doc);
  markPublic(doc);
  describeOperations(doc);
  bearerScheme(doc);
  forEachSchema(doc, openFreeFormObject);
  forEachSchema(doc, openFreeFormArray);
  globalTags(doc);
  return sortDeep(doc) as Json;
}

/** A host without seams does not serve them (404): they are not part of its document. */
function dropSeams(doc: Json): void {
  const paths = (doc.paths as Json) ?? {};
  for (const [p, ops] of Object.entries(paths)) {
    const item = ops as Json;
    for (const [method, op] of Object.entries(item)) {
      if (op && typeof op === 'object' && (op as Json)['x-test-seam']) delete item[method];
    }
    if (!Object.keys(item).some((k) => HTTP_METHODS.has(k))) delete paths[p];
  }
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

function operationsOf(doc: Json): Json[] {
  const out: Json[] = [];
  for (const item of Object.values((doc.paths as Json) ?? {})) {
    for (const [method, op] of Object.entries(item as Json)) if (HTTP_METHODS.has(method) && op && typeof op === 'object') out.push(op as Json);
  }
  return out;
}

/**
 * Every operation has a description: its summary when it has no longer text. A response without a
 * description (Nest leaves `""`) says what its status means.
 */
function describeOperations(doc: Json): void {
  for (const op of operationsOf(doc)) {
    if (typeof op.summary === 'string' && !op.description) op.description = op.summary;
    for (const [status, r] of Object.entries((op.responses as Json) ?? {})) {
      const res = r as Json;
      if (!res.description) res.description = RESPONSE_DESCRIPTIONS[status] ?? `HTTP ${status}.`;
    }
  }
}

const RESPONSE_DESCRIPTIONS: Record<string, string> = {
  '200': 'OK.',
  '201': 'Created.',
  '202': 'Accepted.',
  '204': 'No content.',
  '304': 'Not modified: the If-None-Match ETag still matches.',
};

/** Nest writes `bearerFormat: JWT` by default; the host takes opaque API keys as well, so no format is claimed. */
function bearerScheme(doc: Json): void {
  const schemes = ((doc.components as Json).securitySchemes as Json | undefined) ?? {};
  const bearer = schemes.bearer as Json | undefined;
  if (bearer) delete bearer.bearerFormat;
}

/** The global tag list: each tag an operation uses, with its description from OPENAPI_TAGS. */
export function globalTags(doc: Json): void {
  const used = new Set<string>();
  for (const op of operationsOf(doc)) for (const t of (op.tags as string[] | undefined) ?? []) used.add(t);
  doc.tags = [...used].sort().map((name) => (OPENAPI_TAGS[name] ? { name, description: OPENAPI_TAGS[name] } : { name }));
}

/**
 * An object schema that declares no members at all (no properties, pattern or additional
 * properties, no composition) is free-form: JSON Schema allows any member, and saying so keeps
 * generated clients from typing it as an object that can hold nothing (`Record<string, never>`).
 */
function openFreeFormObject(s: Json): void {
  const types = Array.isArray(s.type) ? s.type : [s.type];
  if (!types.includes('object')) return;
  for (const k of ['properties', 'patternProperties', 'additionalProperties', 'unevaluatedProperties', '$ref', 'allOf', 'anyOf', 'oneOf', 'if', 'not']) {
    if (s[k] !== undefined) return;
  }
  s.additionalProperties = true;
}

/** Likewise an array schema without `items`: any item, said explicitly (`items: {}`). */
function openFreeFormArray(s: Json): void {
  const types = Array.isArray(s.type) ? s.type : [s.type];
  if (types.includes('array') && s.items === undefined && s.prefixItems === undefined) s.items = {};
}

/** Names of the component schemas nothing outside them references, directly or through other schemas. */
export function unreferencedSchemas(doc: Json): Set<string> {
  const schemas = ((doc.components as Json).schemas as Json) ?? {};
  const refsIn = (v: unknown, out: Set<string>): Set<string> => {
    if (Array.isArray(v)) v.forEach((x) => refsIn(x, out));
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v as Json)) {
        if (k === '$ref' && typeof x === 'string' && x.startsWith('#/components/schemas/')) out.add(x.slice('#/components/schemas/'.length));
        else refsIn(x, out);
      }
    }
    return out;
  };
  const { schemas: _own, ...otherComponents } = doc.components as Json;
  const reached = refsIn([doc.paths, otherComponents, doc.webhooks], new Set());
  const queue = [...reached];
  while (queue.length) {
    for (const r of refsIn(schemas[queue.pop() as string], new Set())) {
      if (!reached.has(r)) {
        reached.add(r);
        queue.push(r);
      }
    }
  }
  return new Set(Object.keys(schemas).filter((n) => !reached.has(n)));
}

/** Calls fn on every schema of the document (components, parameters, headers, bodies, responses), nested ones too. */
export function forEachSchema(doc: Json, fn: (schema: Json) => void): void {
  const seen = new Set<unknown>();
  const schema = (v: unknown): void => {
    if (!v || typeof v !== 'object' || Array.isArray(v) || seen.has(v)) return;
    seen.add(v);
    const s = v as Json;
    fn(s);
    for (const k of ['items', 'additionalProperties', 'unevaluatedProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'additionalItems', 'unevaluatedItems']) schema(s[k]);
    for (const k of ['allOf', 'anyOf', 'oneOf', 'prefixItems']) if (Array.isArray(s[k])) (s[k] as unknown[]).forEach(schema);
    if (Array.isArray(s.items)) (s.items as unknown[]).forEach(schema);
    for (const k of ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']) {
      const m = s[k];
      if (m && typeof m === 'object' && !Array.isArray(m)) Object.values(m as Json).forEach(schema);
    }
  };
  const content = (c: unknown): void => {
    for (const media of Object.values((c as Json) ?? {})) schema((media as Json)?.schema);
  };
  const parameter = (p: unknown): void => {
    schema((p as Json)?.schema);
    content((p as Json)?.content);
  };
  const components = (doc.components as Json) ?? {};
  Object.values((components.schemas as Json) ?? {}).forEach(schema);
  Object.values((components.parameters as Json) ?? {}).forEach(parameter);
  Object.values((components.headers as Json) ?? {}).forEach(parameter);
  for (const r of Object.values((components.requestBodies as Json) ?? {})) content((r as Json)?.content);
  for (const item of Object.values((doc.paths as Json) ?? {})) {
    const it = item as Json;
    ((it.parameters as unknown[]) ?? []).forEach(parameter);
    for (const [method, op] of Object.entries(it)) {
      if (!HTTP_METHODS.has(method) || !op || typeof op !== 'object') continue;
      const o = op as Json;
      ((o.parameters as unknown[]) ?? []).forEach(parameter);
      content((o.requestBody as Json | undefined)?.content);
      for (const r of Object.values((o.responses as Json) ?? {})) {
        content((r as Json)?.content);
        Object.values(((r as Json)?.headers as Json) ?? {}).forEach(parameter);
      }
    }
  }
}

/**
 * Public operations (the credential is in the request itself, e.g. a signed interrupt token) say so
 * with an explicit empty security requirement, which generators and linters read as "no auth".
 */
function markPublic(doc: Json): void {
  for (const ops of Object.values((doc.paths as Json) ?? {})) {
    for (const op of Object.values(ops as Json)) {
      const o = op as Json;
      if (!o || typeof o !== 'object' || o['x-test-seam'] || o.security !== undefined) continue;
      if (Array.isArray(o['x-required-scopes']) && (o['x-required-scopes'] as unknown[]).length === 0) o.security = [];
    }
  }
}

/** Seams need a credential but no scope: say so explicitly in the document. */
function markSeams(doc: Json): void {
  for (const ops of Object.values((doc.paths as Json) ?? {})) {
    for (const op of Object.values(ops as Json)) {
      const o = op as Json;
      if (!o || typeof o !== 'object' || !o['x-test-seam']) continue;
      o['x-required-scopes'] ??= [];
      o.security ??= [{ bearer: [] }];
    }
  }
}

function loadRaw(registry: SchemaRegistry, name: string): Json {
  const fn = registry.validator(name);
  return JSON.parse(JSON.stringify(fn.schema)) as Json;
}

/** Embeds a JSON Schema as a component, hoisting its $defs to sibling components. */
function embedProtocolSchema(schemas: Json, component: string, schema: Json): void {
  const defs = { ...((schema.$defs as Json) ?? {}), ...((schema.definitions as Json) ?? {}) };
  delete schema.$defs;
  delete schema.definitions;
  delete schema.$schema;
  delete schema.$id;
  const rewrite = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(rewrite);
    if (v && typeof v === 'object') {
      const o: Json = {};
      for (const [k, x] of Object.entries(v as Json)) {
        if (k === '$ref' && typeof x === 'string') {
          const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(x);
          if (m) o[k] = `#/components/schemas/${component}_${m[2]}`;
          else if (x === '#') o[k] = `#/components/schemas/${component}`;
          else if (/^https?:\/\//.test(x) || /\.schema\.json(#.*)?$/.test(x)) {
            // A reference into another published schema: keep the document self-contained.
            o.type = 'object';
            o.description = `See ${x}`;
          } else o[k] = x;
        } else {
          o[k] = rewrite(x);
        }
      }
      return o;
    }
    return v;
  };
  schemas[component] = rewrite(schema);
  for (const [name, def] of Object.entries(defs)) schemas[`${component}_${name}`] = rewrite(def);
}

function convertNullable(v: unknown): void {
  if (Array.isArray(v)) {
    v.forEach(convertNullable);
    return;
  }
  if (!v || typeof v !== 'object') return;
  const o = v as Json;
  if (o.nullable === true) {
    delete o.nullable;
    if (typeof o.type === 'string') o.type = [o.type, 'null'];
    else if (o.$ref) {
      const ref = o.$ref;
      delete o.$ref;
      o.anyOf = [{ $ref: ref }, { type: 'null' }];
    }
  } else if (o.nullable === false) {
    delete o.nullable;
  }
  for (const x of Object.values(o)) convertNullable(x);
}


export function sortDeep(v: unknown, key?: string): unknown {
  if (Array.isArray(v)) {
    const items = v.map((x) => sortDeep(x));
    if ((key === 'required' || key === 'tags') && items.every((x) => typeof x === 'string')) return [...(items as string[])].sort();
    if (key === 'parameters') {
      return [...items].sort((a, b) => {
        const pa = a as Json;
        const pb = b as Json;
        return `${pa.in}:${pa.name}`.localeCompare(`${pb.in}:${pb.name}`);
      });
    }
    return items;
  }
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v as Json)
        .sort()
        .map((k) => [k, sortDeep((v as Json)[k], k)]),
    );
  }
  return v;
}

