import * as fs from 'node:fs';
import * as path from 'node:path';
import { isManifestPath, servedAtMajor2 } from '../http/protocol-version';
import { SCHEMAS_ROOT } from '../schemas/schema-registry';
import { globalTags, sortDeep, unreferencedSchemas } from './openapi-document';

type Json = Record<string, unknown>;

/**
 * The v2 OpenAPI document (served unauthenticated at `GET /openapi.json` under major 2; spec v2
 * path-manifest.json `getOpenApi`), derived from the v1 document, so both come from the same route
 * metadata: every operation the host serves under `/v1` whose unversioned twin is a v2 manifest
 * operation served at major 2 (its family advertised), at its unversioned path with the manifest's
 * operationId. No seams, no `/v1` paths, no proprietary routes. The shapes that differ per major are
 * swapped for the v2 schemas (the closed v2 error envelope, the tool descriptor with RFC 0204
 * annotations), v1 request header names for their v2 names, and every operation takes
 * `OpenWOP-Version`.
 */

interface ManifestOperation {
  method: string;
  path: string;
  operationId: string;
}

const V2_DIR = path.join(SCHEMAS_ROOT, 'openwop', 'v2');
const MANIFEST = (JSON.parse(fs.readFileSync(path.join(V2_DIR, 'path-manifest.json'), 'utf8')) as { operations: ManifestOperation[] }).operations;

/** A path with its parameter names erased (`/runs/{}`), to compare paths whatever each names its parameters. */
const shape = (p: string): string => p.replace(/\{[^}]+\}/g, '{}');

const MANIFEST_OP = new Map(MANIFEST.map((o) => [`${o.method.toLowerCase()} ${shape(o.path)}`, o]));

/** The unversioned twin of a `/v1` path (`/v1/prompt-templates...` is `/prompts...`), or undefined for a path with none. */
function unversioned(p: string): string | undefined {
  if (p === '/.well-known/openwop') return p;
  if (p.startsWith('/v1/prompt-templates')) return `/prompts${p.slice('/v1/prompt-templates'.length)}`;
  return p.startsWith('/v1/') ? p.slice('/v1'.length) : undefined;
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** v1 request header names that have a v2 name (spec v2 headers.md). */
const HEADER_NAMES: Record<string, string> = { 'x-dedup': 'OpenWOP-Dedup', 'x-force-engine-version': 'OpenWOP-Force-Engine-Version' };

const VERSION_PARAMETER = {
  name: 'OpenWOP-Version',
  in: 'header',
  required: true,
  description: 'The protocol major this client speaks: `2` (or `2.0`). Without it an unversioned path is served under `preferredVersion` (major 1 through the overlap).',
  schema: { type: 'string', pattern: '^2(\\.0)?$' },
};

/** A published v2 schema as a component: a reference into another schema file becomes a description of it (the document stays self-contained). */
function loadV2Schema(name: string): Json {
  const s = JSON.parse(fs.readFileSync(path.join(V2_DIR, `${name}.schema.json`), 'utf8')) as Json;
  delete s.$schema;
  delete s.$id;
  const external = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(external);
    else if (v && typeof v === 'object') {
      const o = v as Json;
      if (typeof o.$ref === 'string' && !o.$ref.startsWith('#')) {
        o.description = `See ${o.$ref}`;
        delete o.$ref;
      }
      Object.values(o).forEach(external);
    }
  };
  external(s);
  return s;
}

export function v2OpenApiDocument(v1: Json): Json {
  const doc = JSON.parse(JSON.stringify(v1)) as Json;
  const info = doc.info as Json;
  info.title = 'OpenWOP host (protocol major 2)';
  info.description =
    'OpenWOP v2 operations of this host: unversioned paths, `OpenWOP-Version: 2` on every request, the closed v2 error envelope. The same handlers serve the v1 document\'s `/v1` operations (`/v1/openapi.json`); only the operations of the families the v2 discovery root lists are here.';
  info['x-openwop-protocol-version'] = '2.0';
  const paths: Json = {};
  for (const [p, item] of Object.entries((doc.paths as Json) ?? {})) {
    const twin = unversioned(p);
    if (twin === undefined || !isManifestPath(shape(twin).replace(/\{\}/g, 'x')) || !servedAtMajor2(shape(twin).replace(/\{\}/g, 'x'))) continue;
    for (const [method, op] of Object.entries(item as Json)) {
      if (!HTTP_METHODS.has(method)) continue;
      const manifest = MANIFEST_OP.get(`${method} ${shape(twin)}`);
      if (!manifest || (op as Json)['x-test-seam']) continue;
      const o = op as Json;
      o.operationId = manifest.operationId;
      const params = ((o.parameters as Json[] | undefined) ?? []).map((prm) => {
        const renamed = prm.in === 'header' ? HEADER_NAMES[String(prm.name).toLowerCase()] : undefined;
        return renamed ? { ...prm, name: renamed } : prm;
      });
      if (p !== '/.well-known/openwop') params.push({ $ref: '#/components/parameters/OpenWOPVersion' });
      o.parameters = params;
      ((paths[twin] as Json | undefined) ?? (paths[twin] = {}) as Json)[method] = o;
    }
  }
  doc.paths = paths;
  const components = doc.components as Json;
  components.parameters = { ...((components.parameters as Json) ?? {}), OpenWOPVersion: VERSION_PARAMETER };
  const schemas = components.schemas as Json;
  schemas.ErrorEnvelope = loadV2Schema('error-envelope');
  schemas.ToolDescriptor = loadV2Schema('tool-descriptor');
  for (const name of unreferencedSchemas(doc)) delete schemas[name];
  globalTags(doc);
  return sortDeep(doc) as Json;
}
