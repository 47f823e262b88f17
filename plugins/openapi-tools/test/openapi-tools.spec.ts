import 'reflect-metadata';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { extensionMetadata, isPlugin, PluginContext, ToolSource } from '@openwop-host/plugin-sdk';
import plugin, { buildRequest, OpenApiToolSource, OpenApiToolsOptions, projectDocument } from '../src';
import petstore from './fixtures/petstore.json';

const PETSTORE = path.join(__dirname, 'fixtures/petstore.json');

function context(config: OpenApiToolsOptions): PluginContext<OpenApiToolsOptions> & { errors: string[] } {
  const errors: string[] = [];
  return {
    id: 'openwop.openapi-tools',
    config,
    errors,
    logger: { debug() {}, info() {}, warn() {}, error: (m: string) => void errors.push(m) },
    http: { fetch: (url, init) => fetch(url, init) },
    kv: { get: async () => undefined, set: async () => undefined, delete: async () => undefined },
  };
}

describe('@openwop-host/openapi-tools', () => {
  it('is a branded plugin whose source is on the tool-source extension point', () => {
    expect(isPlugin(plugin)).toBe(true);
    expect(plugin.id).toBe('openwop.openapi-tools');
    expect(extensionMetadata(ToolSource, OpenApiToolSource)).toEqual({ source: 'host-extension', name: 'openwop.openapi-tools' });
  });

  it('projects one tool per operation with host-assigned tiers and dereferenced input schemas', () => {
    const tools = projectDocument('acme', { id: 'pets', scopes: ['tools:pets'], headers: { 'x-api-key': 'k' } }, petstore as Record<string, unknown>);
    expect(tools.map((t) => t.descriptor.toolId)).toEqual([
      'x-host-acme-pets.createPet',
      'x-host-acme-pets.delete_pets_petId',
      'x-host-acme-pets.getPet',
      'x-host-acme-pets.listPets',
    ]);
    const byId = Object.fromEntries(tools.map((t) => [t.descriptor.toolId, t.descriptor]));
    expect(byId['x-host-acme-pets.listPets']).toMatchObject({ safetyTier: 'read', replayPolicy: 'idempotent', egress: 'host-mediated', auth: { scopes: ['tools:pets'], credentialRef: true } });
    expect(byId['x-host-acme-pets.createPet']).toMatchObject({ safetyTier: 'write', replayPolicy: 'non-deterministic' });
    expect(byId['x-host-acme-pets.delete_pets_petId']).toMatchObject({ safetyTier: 'write', replayPolicy: 'idempotent' });
    expect(byId['x-host-acme-pets.createPet'].inputSchema).toEqual({
      type: 'object',
      additionalProperties: false,
      required: ['body'],
      properties: { body: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, tag: { type: 'string' }, parent: {} } } },
    });
    expect(byId['x-host-acme-pets.getPet'].inputSchema).toMatchObject({ required: ['petId'], properties: { petId: { type: 'string', description: 'The pet id' } } });
    expect(JSON.stringify(tools.map((t) => t.descriptor))).not.toContain('"k"');
  });

  it('encodes path values so an argument cannot change the path, and keeps configured headers authoritative', () => {
    const [getPet] = projectDocument('acme', { id: 'pets', operations: ['getPet'] }, petstore as Record<string, unknown>);
    const req = buildRequest('http://h/api/', getPet.binding, { petId: '../admin?x=1' }, { 'X-Api-Key': 'secret' });
    expect(req.url).toBe('http://h/api/pets/..%2Fadmin%3Fx%3D1');
    expect((req.init.headers as Record<string, string>)['x-api-key']).toBe('secret');
    expect(() => buildRequest('http://h', getPet.binding, {})).toThrow(/petId/);
  });

  describe('invocation', () => {
    let server: http.Server;
    let base: string;
    const seen: Array<{ method?: string; url?: string; key?: string; body: string }> = [];

    beforeAll(async () => {
      server = http.createServer((req, res) => {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', () => {
          seen.push({ method: req.method, url: req.url, key: req.headers['x-api-key'] as string | undefined, body });
          if (req.url?.startsWith('/api/pets/missing')) {
            res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"nope"}');
            return;
          }
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, method: req.method }));
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
    });

    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    it('lists per tenant and calls operations over HTTP', async () => {
      const ctx = context({ vendor: 'acme', documents: [{ id: 'pets', path: PETSTORE, baseUrl: base, headers: { 'x-api-key': 'k1' }, tenants: ['t1'] }] });
      const source = new OpenApiToolSource(ctx);
      source.onModuleInit();
      const signal = new AbortController().signal;
      expect(await source.listTools({ tenant: 't2', signal })).toEqual([]);
      expect((await source.listTools({ tenant: 't1', signal })).length).toBe(4);
      const session = await source.openSession('x-host-acme-pets.createPet', { tenant: 't1', principal: 'p', scopes: new Set(), signal });
      expect(await session.call({ body: { name: 'Rex' } }, signal)).toEqual({ status: 'ok', content: { ok: true, method: 'POST' } });
      expect(seen.at(-1)).toEqual({ method: 'POST', url: '/api/pets', key: 'k1', body: '{"name":"Rex"}' });
      const get = await source.openSession('x-host-acme-pets.getPet', { tenant: 't1', principal: 'p', scopes: new Set(), signal });
      expect(await get.call({ petId: 'missing' }, signal)).toMatchObject({ status: 'error', error: { code: 'http_404' } });
      await expect(source.openSession('x-host-acme-pets.getPet', { tenant: 't2', principal: 'p', scopes: new Set(), signal })).rejects.toThrow();
    });

    it('skips an unreadable document and keeps the others', () => {
      const ctx = context({ vendor: 'acme', documents: [{ id: 'gone', path: '/nonexistent.json' }, { id: 'pets', document: petstore as Record<string, unknown> }] });
      const source = new OpenApiToolSource(ctx);
      source.onModuleInit();
      expect(ctx.errors).toEqual(['OpenAPI document skipped']);
      expect(source.projects()).toBe(true);
    });
  });
});
