import * as fs from 'node:fs';
import * as path from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { servedAtMajor2 } from '../../src/platform/http/protocol-version';
import { createTestApp, TestApp } from '../support/test-app';

type Json = Record<string, any>;
const MANIFEST = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../schemas/openwop/v2/path-manifest.json'), 'utf8')).operations as Array<{ method: string; path: string; operationId: string }>;
const shape = (p: string) => p.replace(/\{[^}]+\}/g, '{}');
const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch']);
const ops = (doc: Json) => Object.entries(doc.paths as Json).flatMap(([p, item]) => Object.entries(item as Json).filter(([m]) => METHODS.has(m)).map(([m, op]) => ({ p, m, op: op as Json })));

/** The v2 OpenAPI document at GET /openapi.json under major 2 (issue 37 item 6). */
describe('the v2 OpenAPI document', () => {
  let t: TestApp;
  let v1: Json;
  let v2: Json;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_PROTOCOL_MAJORS: '1,2' } });
    v1 = (await t.http('GET', '/v1/openapi.json')).body;
    const r = await t.http('GET', '/openapi.json', { headers: { 'OpenWOP-Version': '2' } });
    expect(r.status).toBe(200);
    expect(r.headers['openwop-version']).toBe('2.0');
    v2 = r.body;
  });

  afterAll(async () => {
    await t?.close();
  });

  it('is served unauthenticated under major 2 and validates as OpenAPI 3.1', async () => {
    expect(v2.openapi).toMatch(/^3\.1\./);
    expect(v2.info['x-openwop-protocol-version']).toBe('2.0');
    await expect(SwaggerParser.validate(JSON.parse(JSON.stringify(v2)))).resolves.toBeDefined();
  });

  it('holds exactly the v1 document\'s operations whose unversioned twin is a manifest operation served at major 2, with the manifest\'s operationIds', () => {
    const manifest = new Map(MANIFEST.map((o) => [`${o.method.toLowerCase()} ${shape(o.path)}`, o.operationId]));
    const listed = ops(v2);
    expect(listed.length).toBeGreaterThan(5);
    for (const { p, m, op } of listed) {
      expect(p.startsWith('/v1')).toBe(false);
      expect(op['x-test-seam']).toBeUndefined();
      expect(op.operationId).toBe(manifest.get(`${m} ${shape(p)}`));
      expect(servedAtMajor2(p.replace(/\{[^}]+\}/g, 'x'))).toBe(true);
    }
    // The same route metadata: each v1 operation with a served twin is there, described the same way.
    const twin = (p: string) => (p === '/.well-known/openwop' ? p : p.startsWith('/v1/prompt-templates') ? `/prompts${p.slice(20)}` : p.startsWith('/v1/') ? p.slice(3) : undefined);
    let paired = 0;
    for (const { p, m, op } of ops(v1)) {
      const u = twin(p);
      if (!u || !manifest.has(`${m} ${shape(u)}`) || !servedAtMajor2(u.replace(/\{[^}]+\}/g, 'x'))) continue;
      paired++;
      expect(v2.paths[u]?.[m]?.summary).toBe(op.summary);
      expect(v2.paths[u][m]['x-required-scopes']).toEqual(op['x-required-scopes']);
    }
    expect(paired).toBe(listed.length);
    for (const id of ['createRun', 'getRun', 'listTools', 'getTool']) expect(listed.map((o) => o.op.operationId)).toContain(id);
  });

  it('takes OpenWOP-Version on every operation, uses the v2 header names and the v2 shapes', () => {
    for (const { op } of ops(v2)) {
      const names = (op.parameters as Json[]).map((prm) => (prm.$ref ? prm.$ref : prm.name));
      expect(names).toContain('#/components/parameters/OpenWOPVersion');
      expect(names.some((n: string) => /^x-(dedup|force-engine-version)$/i.test(n))).toBe(false);
    }
    expect(v2.components.parameters.OpenWOPVersion).toMatchObject({ in: 'header', name: 'OpenWOP-Version', required: true });
    expect(Object.keys(v2.components.schemas.ToolDescriptor.properties)).toContain('annotations');
    expect(Object.keys(v1.components.schemas.ToolDescriptor.properties)).not.toContain('annotations');
    expect(v2.components.schemas.ErrorEnvelope.additionalProperties).toBe(false);
  });

  it('leaves the v1 document as it was: /v1/openapi.json and a header-less /openapi.json answer the same v1 bytes', async () => {
    const bare = await t.http('GET', '/openapi.json');
    expect(bare.headers['openwop-version']).toBe('1.0');
    expect(bare.text).toBe((await t.http('GET', '/v1/openapi.json')).text);
    expect(Object.keys(v1.paths).every((p) => !p.startsWith('/runs'))).toBe(true);
    const mismatch = await t.http('GET', '/v1/openapi.json', { headers: { 'OpenWOP-Version': '2.0' } });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.error).toBe('protocol_version_mismatch');
  });
});
