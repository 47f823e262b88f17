/**
 * The committed gRPC proto (schemas/grpc/openwop.proto): it loads with @grpc/proto-loader from its
 * folder alone, its service is the one grpc-transport.md defines, its messages mirror the REST
 * bodies of the protocol's OpenAPI document and JSON Schemas field by field, and a real run's
 * snapshot, events and the discovery document cross the wire and come back as the REST bodies.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { Field, Type } from 'protobufjs';
import { parse as parseYaml } from 'yaml';
import { PROJECT_ROOT } from '../../src/platform/project-root';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import {
  ENGINE_PACKAGE,
  ENGINE_PROTO_DIR,
  ENGINE_REQUIRED_FIELDS,
  ENGINE_SERVICE,
  engineJsonCodec,
  loadEnginePackageDefinition,
  loadEngineRoot,
} from '../../src/transport/grpc/engine-proto';
import { ADDITIONAL_PROPERTIES_FIELD, camelToSnake, snakeToCamel } from '../../src/transport/grpc/json-struct';
import { installChains, noopChain, runEvents, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** grpc-transport.md §"Service definition", in its order. */
const SPEC_METHODS = [
  'GetCapabilities',
  'GetWorkflow',
  'CreateRun',
  'GetRun',
  'CancelRun',
  'BulkCancelRuns',
  'ForkRun',
  'PauseRun',
  'ResumeRun',
  'StreamRunEvents',
  'ResolveInterruptByRun',
  'ResolveInterruptByToken',
  'InspectInterruptByToken',
  'GetArtifact',
  'RegisterWebhook',
  'UnregisterWebhook',
  'VerifyAuditLog',
];

/** This host's additions, after the profile's methods: twins of the host's own REST collection routes. */
const HOST_METHODS = ['ListRuns', 'ListTools', 'ListApprovals', 'ListWorkflows'];

const SCHEMAS_DIR = path.join(PROJECT_ROOT, 'schemas', 'openwop');
/** The protocol's published api/openapi.yaml, kept as reference data for this test. */
const OPENAPI = parseYaml(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'openwop', 'openapi.yaml'), 'utf8')) as Json;
/** The host's own OpenAPI document (npm run openapi:generate): the routes the host methods are the twins of. */
const HOST_OPENAPI = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'schemas', 'openapi.json'), 'utf8')) as Json;

function schemaFile(name: string): Json {
  return JSON.parse(fs.readFileSync(path.join(SCHEMAS_DIR, name), 'utf8'));
}

function atPointer(doc: Json, pointer: string): Json {
  let node = doc;
  for (const raw of pointer.split('/').slice(1)) {
    node = node?.[raw.replace(/~1/g, '/').replace(/~0/g, '~')];
    if (node === undefined) throw new Error(`no ${pointer}`);
  }
  return node;
}

/** A schema node together with the document its local `$ref`s resolve in. */
interface Located {
  node: Json;
  doc: Json;
}

/** Follows `$ref`s: into the OpenAPI components, into schemas/openwop files, or inside the same file. */
function resolve(loc: Located): Located {
  let { node, doc } = loc;
  for (let hops = 0; node && typeof node.$ref === 'string'; hops++) {
    if (hops > 10) throw new Error('$ref loop');
    const ref: string = node.$ref;
    const [file, fragment = ''] = ref.split('#');
    if (file) {
      doc = schemaFile(path.basename(file));
      node = fragment ? atPointer(doc, fragment) : doc;
    } else {
      node = atPointer(doc, fragment);
    }
  }
  return { node, doc };
}

/** An object schema flattened over allOf: its properties, required list and whether it is closed. */
interface ObjectShape {
  properties: Map<string, Located>;
  required: Set<string>;
  closed: boolean;
}

function objectShape(loc: Located): ObjectShape {
  const { node, doc } = resolve(loc);
  const shape: ObjectShape = { properties: new Map(), required: new Set(node.required ?? []), closed: node.additionalProperties === false || node.unevaluatedProperties === false };
  for (const [k, v] of Object.entries(node.properties ?? {})) shape.properties.set(k, { node: v, doc });
  for (const part of node.allOf ?? []) {
    const sub = objectShape({ node: part, doc });
    for (const [k, v] of sub.properties) shape.properties.set(k, v);
    for (const r of sub.required) shape.required.add(r);
    // else-branch requirements (createRun: workflowId unless mode is eval) are conditional: not required.
  }
  return shape;
}

/**
 * `$ref`s of the published OpenAPI document to schemas the protocol's schema folder does not ship
 * (createRun's RFC 0129 `residency`); their members are checked by name only.
 */
const UNRESOLVED_REFS = new Set(['residency.schema.json']);

/** The JSON types a schema node admits ('any' when it does not constrain the type). */
function jsonTypes(loc: Located): Set<string> | 'any' | 'unresolved' {
  if (typeof loc.node?.$ref === 'string' && UNRESOLVED_REFS.has(path.basename(loc.node.$ref.split('#')[0]))) {
    expect(fs.existsSync(path.join(SCHEMAS_DIR, path.basename(loc.node.$ref)))).toBe(false);
    return 'unresolved';
  }
  const { node, doc } = resolve(loc);
  if (node.type) return new Set(Array.isArray(node.type) ? node.type : [node.type]);
  if (node.const !== undefined) return new Set([typeof node.const]);
  if (node.enum) return new Set(node.enum.map((v: unknown) => typeof v));
  const branches = node.anyOf ?? node.oneOf;
  if (branches) {
    const out = new Set<string>();
    for (const b of branches) {
      const t = jsonTypes({ node: b, doc });
      if (t === 'any' || t === 'unresolved') return t;
      t.forEach((x) => out.add(x));
    }
    return out;
  }
  if (node.properties) return new Set(['object']);
  return 'any';
}

function operation(operationId: string, doc: Json = OPENAPI): { path: string; method: string; op: Json } {
  for (const [p, item] of Object.entries<Json>(doc.paths)) {
    for (const [method, op] of Object.entries<Json>(item)) if (op?.operationId === operationId) return { path: p, method, op: { ...op, parameters: [...(item.parameters ?? []), ...(op.parameters ?? [])] } };
  }
  throw new Error(`no operation ${operationId}`);
}

function parameters(op: Json, doc: Json = OPENAPI): Array<{ in: string; name: string; required?: boolean; schema?: Json }> {
  return op.parameters.map((p: Json) => resolve({ node: p, doc }).node);
}

/** What a request message mirrors: the operation's path and query parameters plus its JSON body. */
function requestShape(operationId: string, doc: Json = OPENAPI): ObjectShape & { headers: string[] } {
  const { op } = operation(operationId, doc);
  const body = op.requestBody?.content?.['application/json']?.schema;
  const shape: ObjectShape = body ? objectShape({ node: body, doc }) : { properties: new Map(), required: new Set(), closed: true };
  const headers: string[] = [];
  for (const p of parameters(op, doc)) {
    if (p.in === 'header') {
      headers.push(p.name.toLowerCase());
      continue;
    }
    shape.properties.set(p.name, { node: p.schema ?? {}, doc });
    if (p.in === 'path' || p.required) shape.required.add(p.name);
  }
  return { ...shape, headers };
}

/** The success body of an operation. */
function responseLocated(operationId: string, doc: Json = OPENAPI): Located {
  const { op } = operation(operationId, doc);
  const [, res] = Object.entries<Json>(op.responses).find(([code, r]) => /^2/.test(code) && r.content?.['application/json'])!;
  return { node: res.content['application/json'].schema, doc };
}

/** An operation of the protocol's document, or (`host: true`) of the host's own. */
type Source = { operation: string; part: 'request' | 'response'; host?: boolean } | { file: string; pointer?: string };

interface Mirror {
  message: string;
  source: Source;
  /** The message declares only some of the schema's properties (the rest ride in additional_properties). */
  subset?: boolean;
  /** Spec-defined name changes, REST name → JSON name of the proto field. */
  renames?: Record<string, string>;
  /** Members the spec folds in from another operation's request. */
  alsoFrom?: { operation: string; members: string[] };
  /**
   * Members REST always sends that may be null (a page's `nextCursor`): proto3 strings have no null,
   * so the field is `optional` and left unset for null, and the codec does not write it as required.
   */
  nullable?: string[];
}

const MIRRORS: Mirror[] = [
  { message: 'GetCapabilitiesRequest', source: { operation: 'getCapabilities', part: 'request' } },
  { message: 'GetCapabilitiesResponse', source: { file: 'capabilities.schema.json' }, subset: true },
  { message: 'GrpcTransportAdvertisement', source: { file: 'capabilities.schema.json', pointer: '/properties/grpc' } },
  { message: 'GetWorkflowRequest', source: { operation: 'getWorkflow', part: 'request' } },
  { message: 'GetWorkflowResponse', source: { operation: 'getWorkflow', part: 'response' } },
  { message: 'CreateRunRequest', source: { operation: 'createRun', part: 'request' } },
  { message: 'CreateRunResponse', source: { operation: 'createRun', part: 'response' } },
  { message: 'GetRunRequest', source: { operation: 'getRun', part: 'request' } },
  { message: 'GetRunResponse', source: { operation: 'getRun', part: 'response' } },
  { message: 'RunOwner', source: { file: 'run-snapshot.schema.json', pointer: '/properties/owner' } },
  { message: 'RunError', source: { file: 'run-snapshot.schema.json', pointer: '/properties/error' } },
  { message: 'CancelRunRequest', source: { operation: 'cancelRun', part: 'request' } },
  { message: 'CancelRunResponse', source: { operation: 'cancelRun', part: 'response' } },
  { message: 'BulkCancelRunsRequest', source: { operation: 'bulkCancelRuns', part: 'request' } },
  { message: 'BulkCancelRunsResponse', source: { operation: 'bulkCancelRuns', part: 'response' } },
  { message: 'ErrorEnvelope', source: { file: 'error-envelope.schema.json' } },
  { message: 'ForkRunRequest', source: { operation: 'forkRun', part: 'request' } },
  { message: 'ForkRunResponse', source: { operation: 'forkRun', part: 'response' } },
  { message: 'PauseRunRequest', source: { operation: 'pauseRun', part: 'request' } },
  { message: 'PauseRunResponse', source: { operation: 'pauseRun', part: 'response' } },
  { message: 'ResumeRunRequest', source: { operation: 'resumeRun', part: 'request' } },
  { message: 'ResumeRunResponse', source: { operation: 'resumeRun', part: 'response' } },
  // The spec's StreamRunEventsRequest: the SSE query, streamMode as a list, and the resume cursor.
  // (SSE resumes from the Last-Event-ID header, the long-poll from its lastSequence query parameter.)
  {
    message: 'StreamRunEventsRequest',
    source: { operation: 'streamRunEvents', part: 'request' },
    renames: { streamMode: 'streamModes' },
    alsoFrom: { operation: 'pollRunEvents', members: ['lastSequence'] },
  },
  { message: 'RunEventEnvelope', source: { file: 'run-event.schema.json' } },
  { message: 'ResolveInterruptByRunRequest', source: { operation: 'resolveInterruptByRun', part: 'request' } },
  { message: 'ResolveInterruptByTokenRequest', source: { operation: 'resolveInterruptByToken', part: 'request' } },
  { message: 'ResolveInterruptResponse', source: { operation: 'resolveInterruptByRun', part: 'response' } },
  { message: 'InspectInterruptByTokenRequest', source: { operation: 'inspectInterruptByToken', part: 'request' } },
  { message: 'InspectInterruptResponse', source: { operation: 'inspectInterruptByToken', part: 'response' } },
  { message: 'GetArtifactRequest', source: { operation: 'getArtifact', part: 'request' } },
  { message: 'GetArtifactResponse', source: { operation: 'getArtifact', part: 'response' } },
  { message: 'RegisterWebhookRequest', source: { operation: 'registerWebhook', part: 'request' } },
  { message: 'RegisterWebhookResponse', source: { operation: 'registerWebhook', part: 'response' } },
  { message: 'UnregisterWebhookRequest', source: { operation: 'unregisterWebhook', part: 'request' } },
  { message: 'VerifyAuditLogRequest', source: { operation: 'verifyAuditLog', part: 'request' } },
  { message: 'VerifyAuditLogResponse', source: { operation: 'verifyAuditLog', part: 'response' } },
  { message: 'AuditCheckpoint', source: { file: 'audit-verify-result.schema.json', pointer: '/$defs/Checkpoint' } },
  { message: 'AuditAnomaly', source: { file: 'audit-verify-result.schema.json', pointer: '/$defs/Anomaly' } },
  { message: 'BulkCancelRunResult', source: { operation: 'bulkCancelRuns', part: 'response' } },
  // The host's additions: its own collection routes (schemas/openapi.json).
  { message: 'ListRunsRequest', source: { operation: 'listRuns', part: 'request', host: true } },
  { message: 'ListRunsResponse', source: { operation: 'listRuns', part: 'response', host: true }, nullable: ['nextCursor'] },
  { message: 'ListToolsRequest', source: { operation: 'listTools', part: 'request', host: true } },
  // GET /v1/tools answers the standard view as a bare array, the compact view as {tools}: the message is the latter's shape for both.
  { message: 'ListToolsResponse', source: { operation: 'listCompactTools', part: 'response', host: true } },
  { message: 'ListApprovalsRequest', source: { operation: 'listApprovals', part: 'request', host: true } },
  { message: 'ListApprovalsResponse', source: { operation: 'listApprovals', part: 'response', host: true }, nullable: ['nextCursor'] },
  { message: 'ListWorkflowsRequest', source: { operation: 'listWorkflows', part: 'request', host: true } },
  { message: 'ListWorkflowsResponse', source: { operation: 'listWorkflows', part: 'response', host: true }, nullable: ['nextCursor'] },
  { message: 'WorkflowSummary', source: { operation: 'listWorkflows', part: 'response', host: true }, nullable: ['version', 'description', 'pack', 'parameters'] },
];
// BulkCancelRunResult is the `results[]` item of the bulk-cancel response.
const ITEM_OF: Record<string, string> = { BulkCancelRunResult: '/properties/results/items', WorkflowSummary: '/properties/workflows/items' };

function mirrored(m: Mirror): { shape: ObjectShape; isRequest: boolean; located?: Located } {
  const s = m.source;
  if ('operation' in s && s.part === 'request') {
    const shape = requestShape(s.operation, s.host ? HOST_OPENAPI : OPENAPI);
    for (const member of m.alsoFrom?.members ?? []) shape.properties.set(member, requestShape(m.alsoFrom!.operation).properties.get(member)!);
    return { shape, isRequest: true };
  }
  let located: Located;
  if ('operation' in s) located = resolve(responseLocated(s.operation, s.host ? HOST_OPENAPI : OPENAPI));
  else {
    const doc = schemaFile(s.file);
    located = { node: s.pointer ? atPointer(doc, s.pointer) : doc, doc };
  }
  if (ITEM_OF[m.message]) located = resolve({ node: atPointer(located.node, ITEM_OF[m.message]), doc: located.doc });
  return { shape: objectShape(located), isRequest: false, located: resolve(located) };
}

/** The JSON type a proto field's value takes in the REST body. */
function protoJsonType(f: Field): string {
  const t = f.resolvedType;
  if (t instanceof Type) {
    if (t.fullName === '.google.protobuf.Value') return 'any';
    if (t.fullName === '.google.protobuf.ListValue') return 'array';
    return 'object';
  }
  if (f.type === 'string') return 'string';
  if (f.type === 'bool') return 'boolean';
  if (/int|fixed/.test(f.type)) return 'integer';
  if (f.type === 'double' || f.type === 'float') return 'number';
  throw new Error(`unexpected field type ${f.type}`);
}

function isScalar(f: Field): boolean {
  return !(f.resolvedType instanceof Type);
}

describe('gRPC proto: schemas/grpc/openwop.proto', () => {
  const root = loadEngineRoot();
  const messages = root.lookup(ENGINE_PACKAGE)!;
  const type = (name: string): Type => root.lookupType(`${ENGINE_PACKAGE}.${name}`);

  it('loads with @grpc/proto-loader from schemas/grpc alone, without a warning, and grpc-js builds the service from it', async () => {
    const cwd = process.cwd();
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    let def: protoLoader.PackageDefinition;
    let withStatus: protoLoader.PackageDefinition;
    try {
      process.chdir(PROJECT_ROOT);
      def = protoLoader.loadSync('openwop.proto', { includeDirs: ['schemas/grpc'] });
      // google.rpc.Status (an error's details) is the file beside it, loaded with it by a client that reads them.
      withStatus = protoLoader.loadSync(['openwop.proto', 'google/rpc/status.proto'], { includeDirs: ['schemas/grpc'] });
      await new Promise((r) => setImmediate(r)); // emitWarning reports on a later tick
    } finally {
      process.chdir(cwd);
      process.off('warning', onWarning);
    }
    expect(warnings).toEqual([]);
    expect(def[ENGINE_SERVICE]).toBeDefined();
    expect(withStatus[ENGINE_SERVICE]).toBeDefined();
    expect(withStatus['google.rpc.Status']).toBeDefined();
    const pkg = grpc.loadPackageDefinition(def) as Json;
    const Engine = pkg.openwop.v1.Engine as grpc.ServiceClientConstructor;
    expect(typeof Engine).toBe('function');
    expect(Object.keys(Engine.service)).toEqual([...SPEC_METHODS, ...HOST_METHODS]);
  });

  it('imports only what its messages use, and names the packages of the generated code (go_package, java_package, csharp_namespace)', () => {
    const text = fs.readFileSync(path.join(ENGINE_PROTO_DIR, 'openwop.proto'), 'utf8');
    const imports = [...text.matchAll(/^import\s+"([^"]+)";/gm)].map((m) => m[1]);
    expect(imports.sort()).toEqual(['google/protobuf/empty.proto', 'google/protobuf/struct.proto']);
    // Every import is used by a field or a method of the file (protoc warns about an unused one; the
    // Python client test compiles with protoc and expects no output at all).
    const referenced = new Set<string>();
    const engine = root.lookupService(ENGINE_SERVICE);
    for (const m of engine.methodsArray) for (const t of [m.resolvedRequestType!, m.resolvedResponseType!]) referenced.add(t.fullName);
    for (const t of (messages as unknown as { nestedArray: unknown[] }).nestedArray.filter((n): n is Type => n instanceof Type)) {
      for (const f of t.fieldsArray) if (f.resolvedType) referenced.add(f.resolvedType.fullName);
    }
    const provides: Record<string, string[]> = {
      'google/protobuf/empty.proto': ['.google.protobuf.Empty'],
      'google/protobuf/struct.proto': ['.google.protobuf.Struct', '.google.protobuf.Value', '.google.protobuf.ListValue'],
    };
    for (const i of imports) expect([i, provides[i].some((t) => referenced.has(t))]).toEqual([i, true]);
    const option = (name: string) => new RegExp(`^option ${name} = "([^"]+)";`, 'm').exec(text)?.[1];
    expect(option('go_package')).toMatch(/^[a-z0-9.\-/]+\/openwop\/v1;openwopv1$/);
    expect(option('java_package')).toBe('dev.openwop.v1');
    expect(option('csharp_namespace')).toBe('OpenWop.V1');
  });

  it('needs only the files committed beside it and the well-known types protobufjs bundles', () => {
    const files = (root as unknown as { files: string[] }).files;
    expect(files.length).toBeGreaterThan(1);
    for (const f of files) {
      if (path.isAbsolute(f)) expect(f.startsWith(ENGINE_PROTO_DIR + path.sep)).toBe(true);
      else expect(f).toMatch(/^google\/protobuf\/(any|empty|struct)\.proto$/);
    }
    expect(files).toContain(path.join(ENGINE_PROTO_DIR, 'google', 'rpc', 'status.proto'));
    // google.rpc.Status on the wire: code = 1, message = 2, details = 3 (repeated Any).
    const status = root.lookupType('google.rpc.Status');
    expect(status.fieldsArray.map((f) => [f.name, f.id, f.type, f.repeated])).toEqual([
      ['code', 1, 'int32', false],
      ['message', 2, 'string', false],
      ['details', 3, 'google.protobuf.Any', true],
    ]);
  });

  it('the service has exactly the methods of the spec, then the host\'s, each the PascalCase of a REST operationId, unary except the event stream', () => {
    const def = loadEnginePackageDefinition();
    const service = def[ENGINE_SERVICE] as protoLoader.ServiceDefinition;
    expect(Object.keys(service)).toEqual([...SPEC_METHODS, ...HOST_METHODS]);
    const operationIds = new Set<string>();
    for (const item of Object.values<Json>(OPENAPI.paths)) for (const op of Object.values<Json>(item)) if (op?.operationId) operationIds.add(op.operationId);
    const hostOperationIds = new Set<string>();
    for (const item of Object.values<Json>(HOST_OPENAPI.paths)) for (const op of Object.values<Json>(item)) if (op?.operationId) hostOperationIds.add(op.operationId);
    for (const name of HOST_METHODS) {
      expect([name, hostOperationIds.has(name[0].toLowerCase() + name.slice(1))]).toEqual([name, true]);
      expect([name, service[name].responseStream, (service[name].requestType.type as { name: string }).name, (service[name].responseType.type as { name: string }).name]).toEqual([name, false, `${name}Request`, `${name}Response`]);
    }
    for (const name of SPEC_METHODS) {
      const m = service[name];
      expect(operationIds.has(name[0].toLowerCase() + name.slice(1))).toBe(true);
      expect(m.path).toBe(`/${ENGINE_SERVICE}/${name}`);
      expect(m.requestStream).toBe(false);
      expect(m.responseStream).toBe(name === 'StreamRunEvents');
      expect((m.requestType.type as { name: string }).name).toBe(`${name}Request`);
    }
    const responses = Object.fromEntries(SPEC_METHODS.map((n) => [n, (service[n].responseType.type as { name: string }).name]));
    expect(responses).toMatchObject({
      StreamRunEvents: 'RunEventEnvelope',
      ResolveInterruptByRun: 'ResolveInterruptResponse',
      ResolveInterruptByToken: 'ResolveInterruptResponse',
      InspectInterruptByToken: 'InspectInterruptResponse',
      UnregisterWebhook: 'Empty',
    });
    for (const n of SPEC_METHODS.filter((x) => !['StreamRunEvents', 'ResolveInterruptByRun', 'ResolveInterruptByToken', 'InspectInterruptByToken', 'UnregisterWebhook'].includes(x))) {
      expect(responses[n]).toBe(`${n}Response`);
    }
  });

  it('every message of the package mirrors a REST body or a part of one', () => {
    const declared = (messages as unknown as { nestedArray: unknown[] }).nestedArray.filter((n): n is Type => n instanceof Type).map((t) => t.name);
    expect(declared.sort()).toEqual(MIRRORS.map((m) => m.message).sort());
  });

  describe.each(MIRRORS.map((m) => [m.message, m] as const))('%s', (_, mirror) => {
    const t = type(mirror.message);
    const { shape, isRequest } = mirrored(mirror);
    for (const n of mirror.nullable ?? []) shape.required.delete(n);
    const fields = t.fieldsArray.filter((f) => f.name !== ADDITIONAL_PROPERTIES_FIELD);
    const restName = (name: string) => mirror.renames?.[name] ?? name;

    it('its field names are the snake_case of the REST member names', () => {
      const rest = [...shape.properties.keys()].map(restName);
      const proto = fields.map((f) => snakeToCamel(f.name));
      if (mirror.subset) {
        expect(rest).toEqual(expect.arrayContaining(proto));
        expect(proto).toEqual(expect.arrayContaining([...shape.required]));
      } else {
        expect(proto.sort()).toEqual(rest.sort());
      }
      for (const f of fields) expect(camelToSnake(snakeToCamel(f.name))).toBe(f.name);
    });

    it('its field types carry the JSON types of the REST members', () => {
      for (const [name, member] of shape.properties) {
        const f = t.fields[camelToSnake(restName(name))];
        if (!f) continue; // a subset mirror
        const want = jsonTypes(member);
        if (want === 'unresolved') continue; // UNRESOLVED_REFS: the published document points at a schema it does not ship
        const got = protoJsonType(f);
        if (f.repeated) {
          // A list; the SSE streamMode is one comma-separated string that the proto carries as the list.
          expect([f.name, want === 'any' || want.has('array') || (restName(name) !== name && want.has('string'))]).toEqual([f.name, true]);
          const r = resolve(member);
          if (r.node.items) {
            const items = jsonTypes({ node: r.node.items, doc: r.doc });
            if (items !== 'any' && items !== 'unresolved') expect([f.name, got, items.has(got)]).toEqual([f.name, got, true]);
          }
        } else if (got === 'any') {
          // google.protobuf.Value: the member admits any JSON value, or more than one type.
          expect([f.name, want === 'any' || want.size > 1]).toEqual([f.name, true]);
        } else {
          expect([f.name, got, want !== 'any' && want.has(got)]).toEqual([f.name, got, true]);
        }
      }
    });

    it('lists the members REST requires, and only those', () => {
      const listed = (ENGINE_REQUIRED_FIELDS[`${ENGINE_PACKAGE}.${t.name}`] ?? []).map(snakeToCamel).sort();
      expect(listed).toEqual([...shape.required].map(restName).sort());
    });

    it('marks its optional scalars `optional` so that presence survives, and its required ones plain', () => {
      if (t.name === 'StreamRunEventsRequest') return expect(fields.every((f) => !f.options?.proto3_optional)).toBe(true); // verbatim from the spec
      for (const f of fields.filter(isScalar).filter((x) => !x.repeated)) {
        expect([f.name, f.options?.proto3_optional === true]).toEqual([f.name, !shape.required.has(restName(snakeToCamel(f.name)))]);
      }
    });

    it(isRequest ? 'as a request, carries exactly what the operation defines' : 'carries undeclared members in additional_properties exactly when the REST body is open', () => {
      const extra = t.fields[ADDITIONAL_PROPERTIES_FIELD];
      if (isRequest || shape.closed) return expect(extra).toBeUndefined();
      expect(extra).toBeDefined();
      expect([extra.id, extra.type, extra.repeated]).toEqual([100, 'google.protobuf.Struct', false]);
    });

    it('its message-typed fields are the mirrors of the REST members they stand for', () => {
      for (const f of fields.filter((x) => x.resolvedType instanceof Type && !(x.resolvedType as Type).fullName.startsWith('.google.'))) {
        const nested = MIRRORS.find((m) => m.message === (f.resolvedType as Type).name)!;
        expect(nested).toBeDefined();
        const member = shape.properties.get(snakeToCamel(f.name))!;
        let want = resolve(member).node;
        if (f.repeated) want = resolve({ node: want.items, doc: resolve(member).doc }).node;
        const got = mirrored(nested).located?.node;
        if ('operation' in mirror.source && mirror.source.host) {
          // The host's document carries its own copy of the protocol schema (its component, keys sorted): the same schema by title, members and requirements.
          const outline = (n: Json) => ({ title: n.title, properties: Object.keys(n.properties ?? {}).sort(), required: [...(n.required ?? [])].sort() });
          expect([f.name, outline(got)]).toEqual([f.name, outline(want)]);
        } else {
          expect([f.name, got]).toEqual([f.name, want]);
        }
      }
    });

    if (isRequest) {
      it('leaves the REST headers to metadata', () => {
        const source = mirror.source as { operation: string; host?: boolean };
        const doc = source.host ? HOST_OPENAPI : OPENAPI;
        const { op } = operation(source.operation, doc);
        const headerNames = parameters(op, doc).filter((p) => p.in === 'header').map((p) => p.name.toLowerCase());
        for (const h of headerNames) expect([h, t.fields[h.replace(/-/g, '_')]]).toEqual([h, undefined]);
      });
    }
  });

  it('StreamRunEventsRequest carries the resume cursor of SSE (Last-Event-ID) and of the long-poll (lastSequence)', () => {
    const stream = requestShape('streamRunEvents');
    const poll = requestShape('pollRunEvents');
    expect(stream.headers).toContain('last-event-id');
    expect(poll.properties.has('lastSequence')).toBe(true);
    expect(type('StreamRunEventsRequest').fields.last_sequence.type).toBe('int64');
    expect(type('StreamRunEventsRequest').fields.buffer_ms.type).toBe('int32');
  });

  it('the signed-token resolve answers any JSON object, which ResolveInterruptResponse carries in additional_properties', () => {
    const byToken = objectShape(resolve(responseLocated('resolveInterruptByToken')));
    expect(byToken.properties.size).toBe(0);
    expect(byToken.closed).toBe(false);
    expect(type('ResolveInterruptResponse').fields[ADDITIONAL_PROPERTIES_FIELD]).toBeDefined();
  });
});

describe('gRPC proto: REST bodies across the wire', () => {
  let t: TestApp;
  let token: string;
  const codec = engineJsonCodec();
  const service = loadEnginePackageDefinition()[ENGINE_SERVICE] as protoLoader.ServiceDefinition;
  const registry = SchemaRegistry.shared();

  /** REST body → message → bytes → message → REST body, exactly as a gRPC server and client would. */
  function response(method: string, body: unknown): Json {
    const m = service[method];
    const bytes = m.responseSerialize(codec.fromJson(`${ENGINE_PACKAGE}.${(m.responseType.type as { name: string }).name}`, body));
    return codec.toJson(`${ENGINE_PACKAGE}.${(m.responseType.type as { name: string }).name}`, m.responseDeserialize(bytes));
  }
  function request(method: string, body: unknown): Json {
    const m = service[method];
    const bytes = m.requestSerialize(codec.fromJson(`${ENGINE_PACKAGE}.${method}Request`, body));
    return codec.toJson(`${ENGINE_PACKAGE}.${method}Request`, m.requestDeserialize(bytes));
  }

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_SCHEDULER_ENABLED: 'false' } });
    token = await t.key({ scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'default', 'vendor.test.grpc', { 'vendor.test.grpc.chain': noopChain(2) });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('GetCapabilities carries the discovery document and returns it unchanged', async () => {
    const doc = await t.http('GET', '/.well-known/openwop');
    expect(doc.status).toBe(200);
    expect(response('GetCapabilities', doc.body)).toEqual(doc.body);
  });

  it('a run created over REST: its CreateRun answer, its snapshot (GetRun) and every event (StreamRunEvents) come back as REST sent them', async () => {
    const body = { workflowId: 'vendor.test.grpc.chain', inputs: { who: 'world', nested: { list: [1, 'two', null, { deep: true }], empty: {} } }, tags: ['grpc'], metadata: { source: 'proto-test' } };
    expect(request('CreateRun', body)).toEqual(body);
    const created = await t.http('POST', '/v1/runs', { token, body });
    expect(created.status).toBe(201);
    // REST requires eventsUrl in this answer; where the host leaves it out, the proto3 default ("") stands in.
    expect(response('CreateRun', created.body)).toEqual({ ...created.body, eventsUrl: created.body.eventsUrl ?? '' });

    const done = await waitForStatus(t, token, created.body.runId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(registry.validate('run-snapshot', done)).toEqual([]);
    expect(response('GetRun', done)).toEqual(done);
    expect(request('GetRun', { runId: done.runId })).toEqual({ runId: done.runId });

    const events = await runEvents(t, token, done.runId);
    expect(events.length).toBeGreaterThanOrEqual(6);
    for (const e of events) {
      expect(registry.validate('run-event', e)).toEqual([]);
      expect(response('StreamRunEvents', e)).toEqual(e);
    }
    expect(request('StreamRunEvents', { runId: done.runId, lastSequence: 3, streamModes: ['updates', 'messages'], bufferMs: 250 })).toEqual({
      runId: done.runId,
      lastSequence: 3,
      streamModes: ['updates', 'messages'],
      bufferMs: 250,
    });
  });

  it('a snapshot and an event with everything the schemas allow, and members they do not declare, keep all of it', () => {
    const snapshot = {
      runId: 'run-1',
      workflowId: 'wf',
      status: 'failed',
      owner: { tenant: 't', workspace: 'w', principal: 'p' },
      currentNodeId: 'n2',
      startedAt: '2026-01-02T03:04:05.000Z',
      completedAt: '2026-01-02T03:04:06.123Z',
      agent: { agentId: 'agent-a' },
      runOrchestrator: { agentId: 'agent-o' },
      nodeStates: { n1: { status: 'completed', attempt: 1 }, n2: { status: 'failed', attempt: 3, error: { code: 'x', message: 'y' } } },
      variables: { inputs: { a: 0, b: '', c: false, d: null, e: [] } },
      channels: { c: [1, 2] },
      error: { code: 'node_failed', message: 'n2 failed', details: { nodeId: 'n2' } },
      engineVersion: '1.0.0',
      eventLogSchemaVersion: 0,
      tags: ['a', 'b'],
      metadata: { k: 'v' },
      configurable: { recursionLimit: 5, temperature: 0.5 },
      metrics: { nodeExecutions: 2, openwopCost: { usd: 0.0125 } },
      outputs: { n1: { step: 1 } },
      hostSpecific: { kept: [true] },
    };
    expect(registry.validate('run-snapshot', snapshot)).toEqual([]);
    expect(response('GetRun', snapshot)).toEqual(snapshot);

    for (const payload of [{ a: 1 }, 'text', 42, true, null, [1, { b: 2 }]]) {
      const event = { eventId: 'e1', runId: 'run-1', nodeId: 'n1', type: 'node.completed', payload, timestamp: '2026-01-02T03:04:05.000Z', sequence: 9007199254740991, schemaVersion: 0, engineVersion: '1.0.0', causationId: 'e0', correlationId: 'c1' };
      expect(response('StreamRunEvents', event)).toEqual(event);
    }
  });

  it('members REST always sends survive a peer that leaves defaults off the wire', () => {
    // A proto3 peer writes no field that holds its default: an empty message decodes to nothing.
    const m = service.VerifyAuditLog;
    const empty = m.responseDeserialize(m.responseSerialize({}));
    expect(codec.toJson(`${ENGINE_PACKAGE}.VerifyAuditLogResponse`, empty)).toEqual({ fromSeq: 0, toSeq: 0, chainValid: false, checkpoints: [], anomalies: [] });
    const body = { fromSeq: 0, toSeq: 10, chainValid: false, checkpointsValid: false, checkpoints: [{ checkpoint: 'c', atSequence: 0, merkleRoot: 'm', signature: 's' }], anomalies: [{ atSeq: 3, expectedPrevHash: 'a', actualPrevHash: 'b' }] };
    expect(registry.validate('audit-verify-result', body)).toEqual([]);
    expect(response('VerifyAuditLog', body)).toEqual(body);
    const bulk = { results: [{ runId: 'r1', ok: true, status: 'cancelling' }, { runId: 'r2', ok: false, error: { error: 'not_found', message: 'No such run.' } }] };
    expect(response('BulkCancelRuns', bulk)).toEqual(bulk);
  });
});
