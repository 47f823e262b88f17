import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { HOST_NAME, HOST_VERSION } from '../discovery/discovery.service';
import { SchemaRegistry } from '../schemas/schema-registry';
import { PROTOCOL_SCHEMAS } from './protocol-schemas';

type Json = Record<string, unknown>;

/**
 * Builds the host's OpenAPI 3.1 document from the mounted routes, deterministically: protocol
 * shapes are embedded from the official JSON Schemas, nullability is written the 3.1 way, and every
 * key is sorted so the committed copy can be compared byte for byte.
 */
export function buildOpenApiDocument(app: INestApplication): Json {
  const config = new DocumentBuilder()
    .setTitle('OpenWOP host')
    .setDescription(
      'OpenWOP v1 host: tool catalog (RFC 0078), connection packs (RFC 0095), reviewable-learning proposals (RFC 0096), standing goals (RFC 0097) and portability (RFC 0098). Every error answer is the canonical ErrorEnvelope; `x-required-scopes` lists the scopes an operation needs.',
    )
    .setVersion(HOST_VERSION)
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'An API key (owk_...) or a JWT.' }, 'bearer')
    .build();
  const raw = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (controllerKey, methodKey) => `${controllerKey}_${methodKey}`,
  }) as unknown as Json;
  return postProcess(raw);
}

export function postProcess(doc: Json): Json {
  doc.openapi = '3.1.0';
  (doc.info as Json)['x-implementation'] = HOST_NAME;
  const components = ((doc.components as Json) ??= {});
  const schemas = ((components.schemas as Json) ??= {});
  const registry = SchemaRegistry.shared();
  for (const [component, name] of Object.entries(PROTOCOL_SCHEMAS)) {
    embedProtocolSchema(schemas, component, loadRaw(registry, name));
  }
  convertNullable(doc);
  markSeams(doc);
  return sortDeep(doc) as Json;
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


function sortDeep(v: unknown, key?: string): unknown {
  if (Array.isArray(v)) {
    const items = v.map((x) => sortDeep(x));
    if (key === 'required' || key === 'tags') return [...items].sort();
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

