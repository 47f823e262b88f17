import * as fs from 'node:fs';
import * as path from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { execFileSync } from 'node:child_process';
import { generateOpenApiDocument } from '../../src/openapi-generate';
import { routeScopesTable } from '../../src/platform/openapi/route-scopes';
import { OPENAPI_TAGS } from '../../src/platform/openapi/tags';
import { tempDirs } from '../support/temp-dirs';

const temp = tempDirs();

const root = path.join(__dirname, '../..');
const committed = (p: string) => fs.readFileSync(path.join(root, p), 'utf8');
const REGENERATE = 'run `npm run openapi:generate` and commit the result';

type Op = Record<string, unknown> & { responses?: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }> };

describe('the OpenAPI document', () => {
  let doc: Record<string, unknown>;
  let withSeams: Record<string, unknown>;
  beforeAll(async () => {
    doc = await generateOpenApiDocument();
    withSeams = await generateOpenApiDocument({ testSeams: true });
  });

  const operations = () =>
    Object.entries(doc.paths as Record<string, Record<string, Op>>).flatMap(([p, ops]) => Object.entries(ops).map(([m, op]) => ({ key: `${m.toUpperCase()} ${p}`, method: m, op })));

  it('is generated deterministically and matches the committed copy', async () => {
    const again = await generateOpenApiDocument();
    expect(JSON.stringify(again)).toBe(JSON.stringify(doc));
    const text = `${JSON.stringify(doc, null, 2)}\n`;
    if (committed('schemas/openapi.json') !== text) throw new Error(`schemas/openapi.json is out of date: ${REGENERATE}`);
  });

  it('keeps the who-can-reach-what table in sync, seams included (review its diff like a permission change)', () => {
    if (committed('schemas/route-scopes.txt') !== routeScopesTable(withSeams)) throw new Error(`schemas/route-scopes.txt is out of date: ${REGENERATE}`);
  });

  it('describes the test seams only for a host that serves them', () => {
    const seamPaths = (d: Record<string, unknown>) => Object.keys(d.paths as object).filter((p) => p.startsWith('/v1/host/sample/'));
    expect(seamPaths(doc)).toEqual([]);
    expect(JSON.stringify(doc)).not.toContain('x-test-seam');
    expect(seamPaths(withSeams).length).toBeGreaterThan(0);
    // Every operation of the seam-less document is in the conformance host's, unchanged.
    for (const [p, ops] of Object.entries(doc.paths as Record<string, object>)) expect((withSeams.paths as Record<string, object>)[p]).toEqual(ops);
    // Bodies only the seams use are not left behind in the production document.
    const unused = Object.keys((doc.components as { schemas: object }).schemas).filter((n) => !JSON.stringify(doc.paths).includes(`"#/components/schemas/${n}"`) && !JSON.stringify((doc.components as { schemas: object }).schemas).includes(`"#/components/schemas/${n}"`));
    expect(unused.filter((n) => /^Seam|SessionRun/.test(n))).toEqual([]);
  });

  it('has servers, a described tag for every tag in use, a description per operation and an honest bearer scheme', () => {
    expect(doc.servers).toEqual([{ url: '/', description: expect.any(String) }]);
    const tags = doc.tags as Array<{ name: string; description?: string }>;
    const used = [...new Set(operations().flatMap(({ op }) => op.tags as string[]))].sort();
    expect(tags.map((t) => t.name)).toEqual(used);
    const undescribed = used.filter((t) => !OPENAPI_TAGS[t]);
    if (undescribed.length) throw new Error(`tags without a description: ${undescribed.join(', ')}: add them to src/platform/openapi/tags.ts`);
    expect(operations().filter(({ op }) => typeof op.summary !== 'string' || typeof op.description !== 'string').map((o) => o.key)).toEqual([]);
    const bearer = (doc.components as { securitySchemes: Record<string, Record<string, unknown>> }).securitySchemes.bearer;
    expect(bearer).toEqual({ type: 'http', scheme: 'bearer', description: expect.stringMatching(/API key[\s\S]*JWT/) });
  });

  it('gives every operation one response shape: the compact tool views are operations of their own', () => {
    // A union of objects told apart by a member (POST /v1/import: plan or result) is one shape to a client;
    // an answer that is an array or an object depending on a parameter is not.
    const schemas = (doc.components as { schemas: Record<string, { type?: unknown }> }).schemas;
    const kind = (s: { $ref?: string; type?: unknown }) => String(s.$ref ? schemas[s.$ref.split('/').pop()!].type : s.type);
    const mixed = operations().filter(({ op }) =>
      Object.values(op.responses ?? {}).some((r) =>
        Object.values(r.content ?? {}).some((m) => {
          const alts = ((m.schema as { oneOf?: unknown[]; anyOf?: unknown[] }) ?? {}).oneOf ?? (m.schema as { anyOf?: unknown[] })?.anyOf;
          return Array.isArray(alts) && new Set((alts as Array<{ $ref?: string; type?: unknown }>).filter((a) => a.type !== 'null').map(kind)).size > 1;
        }),
      ),
    );
    expect(mixed.map((o) => o.key)).toEqual([]);
    const ok = (key: string) => operations().find((o) => o.key === key)!.op.responses!['200'].content!['application/json'].schema as Record<string, unknown>;
    expect(ok('GET /v1/tools')).toEqual({ type: 'array', items: { $ref: '#/components/schemas/ToolDescriptor' } });
    expect(ok('GET /v1/compact-tools')).toEqual(expect.objectContaining({ type: 'object', required: ['tools'] }));
    expect(ok('GET /v1/compact-tools/{toolId}')).toEqual({ $ref: '#/components/schemas/CompactToolDescriptor' });
  });

  it('types configurable from the RFC 0058 bounds and the event stream as text/event-stream (or its JSON read)', () => {
    const body = (doc.components as { schemas: Record<string, { properties: Record<string, { properties?: Record<string, { type: string; minimum: number }>; additionalProperties?: unknown }> }> }).schemas.CreateRunBody;
    const c = body.properties.configurable;
    expect(Object.fromEntries(Object.entries(c.properties!).map(([k, v]) => [k, [v.type, v.minimum]]))).toEqual({
      runTimeoutMs: ['integer', 1],
      maxLoopIterations: ['integer', 1],
      recursionLimit: ['integer', 1],
      maxCostUsd: ['number', 0],
    });
    expect(c.additionalProperties).toBe(true);
    const sse = operations().find((o) => o.key === 'GET /v1/runs/{runId}/events')!.op.responses!['200'].content!;
    // The stream, and the JSON read of the logged events for a client that asks for JSON.
    expect(Object.keys(sse).sort()).toEqual(['application/json', 'text/event-stream']);
  });

  it('is valid OpenAPI 3.1', async () => {
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(JSON.parse(JSON.stringify(doc)))).resolves.toBeDefined();
  });

  it('gives every operation a unique operationId, a tag, its scopes, its security and canonical errors', () => {
    const ids = new Set<string>();
    const problems: string[] = [];
    for (const { key, method, op } of operations()) {
      if (typeof op.operationId !== 'string') problems.push(`${key}: no operationId`);
      else if (ids.has(op.operationId)) problems.push(`${key}: duplicate operationId ${op.operationId}`);
      else ids.add(op.operationId);
      if (!Array.isArray(op.tags) || !op.tags.length) problems.push(`${key}: no tag`);
      if (!Array.isArray(op['x-required-scopes'])) problems.push(`${key}: no x-required-scopes`);
      // A public operation (no scopes: the signed interrupt-token routes, whose token is the credential) has no bearer requirement and no 401.
      const isPublic = Array.isArray(op['x-required-scopes']) && op['x-required-scopes'].length === 0 && !(Array.isArray(op.security) && op.security.length);
      if (!isPublic && (!Array.isArray(op.security) || !op.security.length)) problems.push(`${key}: no security requirement`);
      const responses = op.responses ?? {};
      const success = Object.keys(responses).filter((s) => /^2/.test(s));
      if (!success.length) problems.push(`${key}: no success response`);
      if (!isPublic && !responses['401']) problems.push(`${key}: no 401 response`);
      for (const [status, r] of Object.entries(responses)) {
        if (!/^[45]/.test(status)) continue;
        const ref = r.content?.['application/json']?.schema?.$ref;
        if (ref !== '#/components/schemas/ErrorEnvelope') problems.push(`${key}: ${status} does not use ErrorEnvelope`);
      }
      if (['post', 'put', 'patch'].includes(method) && op.requestBody === undefined && !/\/(apply|reject|pause|resume|abandon|reset|grant|deny|session-run)$/.test(key)) {
        // Action routes may have no body; anything else must say what it accepts.
        problems.push(`${key}: no request body schema`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('matches the committed TypeScript client types', () => {
    const out = path.join(temp.make('openwop-types-'), 'openapi.d.ts');
    execFileSync(process.execPath, [path.join(root, 'node_modules/openapi-typescript/bin/cli.js'), path.join(root, 'schemas/openapi.json'), '-o', out], { stdio: 'pipe' });
    if (fs.readFileSync(out, 'utf8') !== committed('generated/openapi.d.ts')) throw new Error(`generated/openapi.d.ts is out of date: ${REGENERATE}`);
  });

  it('types no free-form object as an object that can hold nothing (Record<string, never>)', () => {
    const types = committed('generated/openapi.d.ts');
    // The only ones left: the document has no webhooks or $defs, and bodies that are closed and empty (no member is accepted).
    const schemas = (doc.components as { schemas: Record<string, { properties?: object; additionalProperties?: unknown }> }).schemas;
    const closedEmpty = Object.entries(schemas).filter(([, s]) => s.properties && !Object.keys(s.properties).length && s.additionalProperties !== true).map(([n]) => n);
    const lines = types.split('\n').filter((l) => l.includes('Record<string, never>')).map((l) => l.trim());
    expect(lines.sort()).toEqual(['export type $defs = Record<string, never>;', 'export type webhooks = Record<string, never>;', ...closedEmpty.map((n) => `${n}: Record<string, never>;`)].sort());
    expect(types).toMatch(/details\?: \{\s*\[key: string\]: unknown;\s*\}/);
  });
});
