import type { ToolDescriptor } from '@openwop-host/plugin-sdk';
import type { OpenApiDocumentOptions } from './options';

type Json = Record<string, unknown>;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch'] as const;
const SAFE_METHODS = new Set(['get', 'head', 'options']);
const IDEMPOTENT_METHODS = new Set(['get', 'head', 'options', 'put', 'delete']);

/** How to call one operation: kept beside its descriptor, never projected. */
export interface OperationBinding {
  toolId: string;
  method: string;
  path: string;
  pathParams: string[];
  queryParams: string[];
  headerParams: string[];
  hasBody: boolean;
}

export interface ProjectedTool {
  descriptor: ToolDescriptor;
  binding: OperationBinding;
}

function isObject(v: unknown): v is Json {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

/** Inlines the document's local `$ref`s (`#/components/...`); a cycle is cut to an open schema. */
export function dereference(value: unknown, root: Json, seen: ReadonlySet<string> = new Set()): unknown {
  if (Array.isArray(value)) return value.map((v) => dereference(v, root, seen));
  if (!isObject(value)) return value;
  if (typeof value.$ref === 'string') {
    const ref = value.$ref;
    if (!ref.startsWith('#/') || seen.has(ref)) return {};
    let target: unknown = root;
    for (const part of ref.slice(2).split('/')) target = isObject(target) ? target[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    if (!isObject(target)) return {};
    const { $ref: _ref, ...siblings } = value;
    return dereference({ ...target, ...siblings }, root, new Set([...seen, ref]));
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) out[k] = dereference(v, root, seen);
  return out;
}

function slug(method: string, path: string): string {
  return `${method}_${path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '')}`;
}

/**
 * The tools of one OpenAPI 3 document: one per operation. The plugin, not the document, decides
 * the tier: safe methods read, everything else writes.
 */
export function projectDocument(vendor: string, opts: OpenApiDocumentOptions, doc: Json): ProjectedTool[] {
  const out: ProjectedTool[] = [];
  const paths = isObject(doc.paths) ? doc.paths : {};
  for (const [path, rawItem] of Object.entries(paths)) {
    if (!isObject(rawItem)) continue;
    const item = dereference(rawItem, doc) as Json;
    const shared = Array.isArray(item.parameters) ? (item.parameters as Json[]) : [];
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      const operationId = typeof op.operationId === 'string' && /^[A-Za-z0-9._-]+$/.test(op.operationId) ? op.operationId : slug(method, path);
      if (opts.operations && !opts.operations.includes(operationId)) continue;
      const params = new Map<string, Json>();
      for (const p of [...shared, ...(Array.isArray(op.parameters) ? (op.parameters as Json[]) : [])]) {
        if (isObject(p) && typeof p.name === 'string' && typeof p.in === 'string') params.set(`${p.in}:${p.name}`, p);
      }
      const properties: Json = {};
      const required: string[] = [];
      const binding: OperationBinding = {
        toolId: `x-host-${vendor}-${opts.id}.${operationId}`,
        method: method.toUpperCase(),
        path,
        pathParams: [],
        queryParams: [],
        headerParams: [],
        hasBody: false,
      };
      for (const p of params.values()) {
        if (p.in === 'cookie') continue;
        const name = p.name as string;
        if (name in properties) continue; // the same name in two locations: the first wins, deterministically
        const schema: Json = isObject(p.schema) ? { ...p.schema } : { type: 'string' };
        if (typeof p.description === 'string' && schema.description === undefined) schema.description = p.description;
        properties[name] = schema;
        if (p.required === true || p.in === 'path') required.push(name);
        if (p.in === 'path') binding.pathParams.push(name);
        else if (p.in === 'query') binding.queryParams.push(name);
        else if (p.in === 'header') binding.headerParams.push(name);
      }
      const body = isObject(op.requestBody) && isObject(op.requestBody.content) ? (op.requestBody.content as Json)['application/json'] : undefined;
      if (isObject(body) && !('body' in properties)) {
        properties.body = isObject(body.schema) ? body.schema : {};
        binding.hasBody = true;
        if ((op.requestBody as Json).required === true) required.push('body');
      }
      const inputSchema: Json = { type: 'object', properties, additionalProperties: false };
      if (required.length) inputSchema.required = required;
      const safe = SAFE_METHODS.has(method);
      const descriptor: ToolDescriptor = {
        toolId: binding.toolId,
        source: 'host-extension',
        title: typeof op.summary === 'string' ? op.summary : operationId,
        inputSchema,
        egress: 'host-mediated',
        replayPolicy: IDEMPOTENT_METHODS.has(method) ? 'idempotent' : 'non-deterministic',
        safetyTier: safe ? 'read' : 'write',
      };
      const description = typeof op.description === 'string' ? op.description : typeof op.summary === 'string' ? op.summary : undefined;
      if (description) descriptor.description = description;
      const auth: NonNullable<ToolDescriptor['auth']> = {};
      if (opts.scopes?.length) auth.scopes = [...opts.scopes];
      if (opts.headers && Object.keys(opts.headers).length) auth.credentialRef = true;
      if (Object.keys(auth).length) descriptor.auth = auth;
      out.push({ descriptor, binding });
    }
  }
  return out.sort((a, b) => (a.binding.toolId < b.binding.toolId ? -1 : a.binding.toolId > b.binding.toolId ? 1 : 0));
}

/** The HTTP request of one call. Path values are percent-encoded, so an argument cannot change the path. */
export function buildRequest(
  baseUrl: string,
  binding: OperationBinding,
  args: Record<string, unknown>,
  headers: Record<string, string> = {},
): { url: string; init: RequestInit } {
  let path = binding.path;
  for (const name of binding.pathParams) {
    const v = args[name];
    if (v === undefined || v === null) throw new Error(`missing path parameter "${name}"`);
    path = path.split(`{${name}}`).join(encodeURIComponent(String(v)));
  }
  const url = new URL(baseUrl.replace(/\/$/, '') + path);
  for (const name of binding.queryParams) {
    const v = args[name];
    if (v === undefined || v === null) continue;
    for (const item of Array.isArray(v) ? v : [v]) url.searchParams.append(name, typeof item === 'object' ? JSON.stringify(item) : String(item));
  }
  const h: Record<string, string> = { accept: 'application/json' };
  for (const name of binding.headerParams) if (args[name] !== undefined) h[name.toLowerCase()] = String(args[name]);
  // Configured headers last: a tool argument cannot replace the operator's credential header.
  for (const [k, v] of Object.entries(headers)) h[k.toLowerCase()] = v;
  const init: RequestInit = { method: binding.method, headers: h };
  if (binding.hasBody && args.body !== undefined) {
    h['content-type'] = 'application/json';
    init.body = JSON.stringify(args.body);
  }
  return { url: url.toString(), init };
}
