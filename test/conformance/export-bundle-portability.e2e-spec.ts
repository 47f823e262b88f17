/**
 * What the official `export-bundle-portability` scenario (RFC 0098) asserts, checked with the
 * project's own code and schemas, under the suite's environment (seams on, a key holding both
 * portability scopes).
 */
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { createTestApp, TestApp } from '../support/test-app';

const GOOD = {
  bundleVersion: '1',
  source: { origin: 'adapter:conformance' },
  items: [
    { kind: 'prompt-template', ref: 'tpl-1', payload: { templateId: 'conformance-tpl', version: '1.0.0', kind: 'system', text: 'Hello.' } },
    { kind: 'connection-ref', ref: 'conn-1', dependsOn: ['tpl-1'], payload: { provider: 'slack', credentialRef: 'cred:abc' } },
  ],
};

const LEAKY = {
  bundleVersion: '1',
  source: { origin: 'adapter:conformance' },
  items: [{ kind: 'connection-ref', ref: 'c1', payload: { provider: 'anthropic', apiKey: 'sk-conformance-canary' } }],
};

describe('conformance: export-bundle-portability (server-free legs, against schemas/openwop)', () => {
  const schemas = SchemaRegistry.shared();

  it('capabilities.schema.json declares portability.{export,import,kinds,dryRun} with the import ⇒ dryRun rule', () => {
    const caps = JSON.parse(JSON.stringify(schemas.validator('capabilities').schema)) as { properties: { portability: Record<string, unknown> } };
    const p = caps.properties.portability as { properties: Record<string, unknown>; if?: unknown; then?: unknown };
    expect(Object.keys(p.properties).sort()).toEqual(['dryRun', 'export', 'import', 'kinds']);
    expect(p.if).toBeDefined();
    expect(p.then).toBeDefined();
  });

  it('the good bundle validates; version 2, kind "mystery" and a missing ref do not', () => {
    expect(schemas.validate('export-bundle', GOOD)).toEqual([]);
    expect(schemas.validate('export-bundle', { ...GOOD, bundleVersion: '2' })).not.toEqual([]);
    expect(schemas.validate('export-bundle', { ...GOOD, items: [{ kind: 'mystery', ref: 'x', payload: {} }] })).not.toEqual([]);
    expect(schemas.validate('export-bundle', { ...GOOD, items: [{ kind: 'pack', payload: {} }] })).not.toEqual([]);
  });

  it('credential-named keys are rejected at the bundle root and inside source', () => {
    for (const key of ['clientSecret', 'client_secret', 'apiKey', 'api_key', 'accessToken', 'refreshToken', 'password', 'privateKey']) {
      expect(schemas.validate('export-bundle', { ...GOOD, [key]: 'x' })).not.toEqual([]);
      expect(schemas.validate('export-bundle', { ...GOOD, source: { ...GOOD.source, [key]: 'x' } })).not.toEqual([]);
    }
  });

  it('RunEventType includes import.applied, and importApplied accepts the example and rejects extra items', () => {
    expect(JSON.stringify(schemas.validator('run-event').schema)).toContain('"import.applied"');
    const importApplied = { $ref: 'https://openwop.dev/spec/v1/run-event-payloads.schema.json#/$defs/importApplied' };
    const ok = { bundleOrigin: 'https://host-a.example', counts: { created: 2, skipped: 1 }, secretsToRebind: ['anthropic'] };
    schemas.validator('run-event-payloads');
    expect(schemas.validateWith(importApplied, ok)).toEqual([]);
    expect(schemas.validateWith(importApplied, { ...ok, items: [] })).not.toEqual([]);
  });
});

describe('conformance: export-bundle-portability (behavioral)', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    // What importing the good bundle's items directly needs (a prompt template, a connection).
    key = await t.key({ scopes: ['portability:export', 'portability:import', 'runs:read', 'packs:publish', 'connections:manage'] });
  });
  afterAll(async () => t?.close());

  it('advertises portability at the discovery root, valid against capabilities.schema.json', async () => {
    const res = await t.http('GET', '/.well-known/openwop');
    expect(res.status).toBe(200);
    expect(res.body.portability).toMatchObject({ export: true, import: true, dryRun: true });
    expect(Array.isArray(res.body.portability.kinds)).toBe(true);
    const caps = SchemaRegistry.shared().validator('capabilities').schema as { properties: { portability: Record<string, unknown> } };
    expect(SchemaRegistry.shared().validateWith(caps.properties.portability, res.body.portability)).toEqual([]);
  });

  it('refuses the leaky bundle on the dry-run seam with 422, without echoing the value', async () => {
    const res = await t.http('POST', '/v1/host/sample/import?dryRun=true', { token: key, body: { bundle: LEAKY } });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body).sort()).toEqual(expect.arrayContaining(['error', 'message']));
    expect(res.text).not.toContain('sk-conformance-canary');
  });

  it('the good bundle is not refused as leaky (credentialRef passes)', async () => {
    const res = await t.http('POST', '/v1/host/sample/import?dryRun=true', { token: key, body: { bundle: GOOD } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ dryRun: true, order: ['tpl-1', 'conn-1'] });
  });

  it('refuses a dependsOn cycle with 422 naming it', async () => {
    const cyclic = {
      ...GOOD,
      items: [
        { ...GOOD.items[0], dependsOn: ['conn-1'] },
        GOOD.items[1],
      ],
    };
    const res = await t.http('POST', '/v1/host/sample/import', { token: key, body: { bundle: cyclic } });
    expect(res.status).toBe(422);
    expect(res.body.details.cycle).toEqual(expect.arrayContaining(['tpl-1', 'conn-1']));
  });

  it('serves the export seam: a schema-valid bundle', async () => {
    const res = await t.http('GET', '/v1/host/sample/export', { token: key });
    expect(res.status).toBe(200);
    expect(SchemaRegistry.shared().validate('export-bundle', res.body)).toEqual([]);
  });

  it('never answers the seams without credentials', async () => {
    expect((await t.http('POST', '/v1/host/sample/import?dryRun=true', { body: { bundle: LEAKY } })).status).toBe(401);
    expect((await t.http('GET', '/v1/host/sample/export')).status).toBe(401);
  });
});
