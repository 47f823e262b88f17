import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';

const PETSTORE = path.resolve(__dirname, '../../plugins/openapi-tools/test/fixtures/petstore.json');

describe('a third-party tool source plugin loaded through OPENWOP_PLUGINS (e2e)', () => {
  let t: TestApp;
  let api: http.Server;
  let reader: string;
  let petsReader: string;
  let tenantB: string;
  const hits: string[] = [];

  beforeAll(async () => {
    api = http.createServer((req, res) => {
      hits.push(`${req.method} ${req.url} ${req.headers['x-api-key'] ?? ''}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(api.address() as AddressInfo).port}/api`;
    t = await createTestApp({
      env: { OPENWOP_PLUGINS: './plugins/openapi-tools/src/index.ts', OPENWOP_PLUGINS_STRICT: 'true', OPENWOP_TEST_SEAMS: 'true' },
      configFile: {
        tools: { hostExtensions: [{ toolId: 'x-host-acme-pets.getPet', safetyTier: 'read' }] },
        plugins: {
          'openwop.openapi-tools': {
            vendor: 'acme',
            documents: [{ id: 'pets', path: PETSTORE, baseUrl: base, headers: { 'x-api-key': 'super-secret-value' }, scopes: ['tools:pets'], tenants: ['default'] }],
          },
        },
      },
    });
    reader = await t.key({ scopes: ['tools:read', 'runs:create', 'runs:read'] });
    petsReader = await t.key({ scopes: ['tools:read', 'runs:create', 'runs:read', 'tools:pets'] });
    tenantB = await t.key({ tenant: 'tenant-b', scopes: ['tools:read', 'tools:pets'] });
  });

  afterAll(async () => {
    await t?.close();
    await new Promise<void>((r) => api.close(() => r()));
  });

  it('puts the plugin\'s tools in the catalog of principals holding their scope, and nowhere else', async () => {
    const withScope = (await t.http('GET', '/v1/tools', { token: petsReader })).body.map((d: { toolId: string }) => d.toolId);
    expect(withScope).toEqual(expect.arrayContaining(['x-host-acme-pets.createPet', 'x-host-acme-pets.listPets', 'x-host-acme-pets.delete_pets_petId']));
    const without = (await t.http('GET', '/v1/tools', { token: reader })).body.map((d: { toolId: string }) => d.toolId);
    expect(without.some((id: string) => id.startsWith('x-host-acme-pets.'))).toBe(false);
    const other = (await t.http('GET', '/v1/tools', { token: tenantB })).body.map((d: { toolId: string }) => d.toolId);
    // Only the operator-declared tool (every tenant): the plugin's documents are for tenant default.
    expect(other.filter((id: string) => id.startsWith('x-host-acme-pets.'))).toEqual(['x-host-acme-pets.getPet']);
    const one = await t.http('GET', '/v1/tools/x-host-acme-pets.listPets', { token: petsReader });
    expect(one.body).toMatchObject({ source: 'host-extension', safetyTier: 'read', auth: { scopes: ['tools:pets'], credentialRef: true } });
    expect(JSON.stringify((await t.http('GET', '/v1/tools', { token: petsReader })).body)).not.toContain('super-secret-value');
  });

  it('refuses a toolId collision loudly: neither claim is served, /readyz names both sources', async () => {
    const ids = (await t.http('GET', '/v1/tools', { token: petsReader })).body.map((d: { toolId: string }) => d.toolId);
    expect(ids).not.toContain('x-host-acme-pets.getPet');
    const ready = await t.http('GET', '/readyz');
    expect(ready.body.components['tool-catalog']).toMatchObject({ ok: false });
    expect(ready.body.components['tool-catalog'].detail).toContain('host-extension');
    expect(ready.body.components['tool-catalog'].detail).toContain('openwop.openapi-tools');
    expect(t.logs.some((l) => l.includes('toolId collision') && l.includes('x-host-acme-pets.getPet'))).toBe(true);
  });

  it('invokes a plugin tool in a session, with the operator\'s header and no secret in the events', async () => {
    const res = await t.http('POST', '/v1/host/sample/tools/session-run', { token: petsReader, body: { toolId: 'x-host-acme-pets.listPets', arguments: { limit: 5 } } });
    expect(res.status).toBe(200);
    expect(hits).toContain('GET /api/pets?limit=5 super-secret-value');
    const ev = await t.http('GET', `/v1/host/sample/test/runs/${res.body.runId}/events`, { token: petsReader });
    expect(ev.body.events.find((e: { type: string }) => e.type === 'tool.session.closed').payload.outcome).toBe('completed');
    expect(JSON.stringify(ev.body)).not.toContain('super-secret-value');
    expect(t.logs.join('\n')).not.toContain('super-secret-value');
  });
});
