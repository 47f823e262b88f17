import { createTestApp, TestApp } from '../support/test-app';
import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';
import { HealthService } from '../../src/platform/health/health.service';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { ToolCatalogService } from '../../src/capabilities/tool-catalog/tool-catalog.service';

const schemas = SchemaRegistry.shared();

const NODE_PACK = {
  name: 'vendor.acme.text-tools',
  version: '1.0.0',
  engines: { openwop: '>=1.0.0 <2.0.0' },
  runtime: { language: 'javascript', entry: 'dist/index.js' },
  nodes: [
    { typeId: 'vendor.acme.text.upper', version: '1.0.0', category: 'data', role: 'pure', label: 'Upper-case' },
    { typeId: 'vendor.acme.crm.upsert', version: '1.0.0', category: 'integration', role: 'side-effect', capabilities: ['side-effectful'], requiredCredentials: [] },
  ],
};

const CHAIN_PACK = {
  name: 'vendor.acme.presets',
  version: '1.0.0',
  kind: 'workflow-chain',
  engines: { openwop: '>=1.0.0' },
  chains: [
    {
      chainId: 'vendor.acme.summarize',
      version: '1.0.0',
      label: 'Summarize',
      description: 'Summarizes a document',
      parameters: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] },
      dag: { nodes: [{ id: 'n1', typeId: 'core.noop' }] },
    },
  ],
};

describe('tool catalog (e2e)', () => {
  let t: TestApp;
  let reader: string;
  let secretReader: string;
  let otherTenant: string;
  let noScope: string;

  beforeAll(async () => {
    t = await createTestApp({
      configFile: {
        tools: {
          hostExtensions: [
            { toolId: 'x-host-acme-hidden', title: 'Hidden', safetyTier: 'exec', auth: { scopes: ['tools:acme:admin'] } },
            { toolId: 'x-host-acme-tenant-b-only', safetyTier: 'read', tenants: ['tenant-b'] },
          ],
        },
      },
    });
    reader = await t.key({ scopes: ['tools:read'] });
    secretReader = await t.key({ scopes: ['tools:read', 'tools:acme:admin'] });
    otherTenant = await t.key({ tenant: 'tenant-b', scopes: ['tools:read'] });
    noScope = await t.key({ scopes: ['runs:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('refuses an unauthenticated list and read with 401 before anything else', async () => {
    for (const url of ['/v1/tools', '/v1/tools/x-host-openwop-echo', '/v1/tools/__nope__']) {
      const res = await t.http('GET', url);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'unauthenticated', message: expect.any(String) });
    }
  });

  it('needs tools:read', async () => {
    const res = await t.http('GET', '/v1/tools', { token: noScope });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('forbidden');
  });

  it('lists a bare, sorted array of valid descriptors with the scope-less baseline tool', async () => {
    const res = await t.http('GET', '/v1/tools', { token: reader });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(Array.isArray(res.body)).toBe(true);
    const ids = res.body.map((d: { toolId: string }) => d.toolId);
    expect(ids).toContain('x-host-openwop-echo');
    expect(ids).not.toContain('x-host-acme-hidden');
    expect(ids).not.toContain('x-host-acme-tenant-b-only');
    expect([...ids].sort((a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(ids);
    for (const d of res.body) expect(schemas.validate('tool-descriptor', d)).toEqual([]);
    const again = await t.http('GET', '/v1/tools', { token: reader });
    expect(again.text).toBe(res.text);
    expect(res.headers['cache-control']).toBe('private, no-cache');
    expect(res.headers.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const notModified = await t.http('GET', '/v1/tools', { token: reader, headers: { 'if-none-match': String(res.headers.etag) } });
    expect(notModified.status).toBe(304);
    expect(notModified.text).toBe('');
    const stale = await t.http('GET', '/v1/tools', { token: reader, headers: { 'if-none-match': '"something-else"' } });
    expect(stale.status).toBe(200);
  });

  it('shows a scoped tool only to a principal holding its scopes; hidden and unknown are the same 404', async () => {
    const list = await t.http('GET', '/v1/tools', { token: secretReader });
    expect(list.body.map((d: { toolId: string }) => d.toolId)).toContain('x-host-acme-hidden');
    const seen = await t.http('GET', '/v1/tools/x-host-acme-hidden', { token: secretReader });
    expect(seen.status).toBe(200);
    expect(seen.body).toMatchObject({ toolId: 'x-host-acme-hidden', source: 'host-extension', safetyTier: 'exec' });

    const hidden = await t.http('GET', '/v1/tools/x-host-acme-hidden', { token: reader });
    const unknown = await t.http('GET', '/v1/tools/__conformance_nonexistent_tool__', { token: reader });
    expect(hidden.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(hidden.body).toEqual(unknown.body);
    expect(hidden.body).toEqual({ error: 'not_found', message: expect.any(String) });
    expect(hidden.headers['www-authenticate']).toBeUndefined();
  });

  it('keeps tenants apart', async () => {
    const b = await t.http('GET', '/v1/tools', { token: otherTenant });
    expect(b.body.map((d: { toolId: string }) => d.toolId)).toContain('x-host-acme-tenant-b-only');
    const a = await t.http('GET', '/v1/tools/x-host-acme-tenant-b-only', { token: reader });
    expect(a.status).toBe(404);
  });

  it('projects installed node packs and workflow-chain packs for their tenant only', async () => {
    const registry = t.moduleRef.get(ArtifactRegistryService);
    await registry.install('node-pack', NODE_PACK, { tenant: 'default', principal: 'tester' }, 'test');
    await registry.install('workflow-chain-pack', CHAIN_PACK, { tenant: 'default', principal: 'tester' }, 'test');
    const res = await t.http('GET', '/v1/tools', { token: reader });
    const byId = new Map<string, Record<string, unknown>>(res.body.map((d: { toolId: string }) => [d.toolId, d]));
    expect(byId.get('openwop:vendor.acme.text.upper')).toMatchObject({ source: 'node-pack', safetyTier: 'pure', replayPolicy: 'deterministic', egress: 'none' });
    expect(byId.get('openwop:vendor.acme.crm.upsert')).toMatchObject({ source: 'node-pack', safetyTier: 'write' });
    expect(byId.get('workflow:vendor.acme.summarize')).toMatchObject({ source: 'workflow', safetyTier: 'write', title: 'Summarize' });
    const encoded = await t.http('GET', `/v1/tools/${encodeURIComponent('openwop:vendor.acme.text.upper')}`, { token: reader });
    expect(encoded.status).toBe(200);
    expect(encoded.body).toEqual(byId.get('openwop:vendor.acme.text.upper'));

    const b = await t.http('GET', '/v1/tools', { token: otherTenant });
    expect(b.body.map((d: { toolId: string }) => d.toolId)).not.toContain('openwop:vendor.acme.text.upper');
    expect((await t.http('GET', `/v1/tools/${encodeURIComponent('openwop:vendor.acme.text.upper')}`, { token: otherTenant })).status).toBe(404);

    const bySource = await t.http('GET', '/v1/tools?source=workflow', { token: reader });
    expect(bySource.body.map((d: { toolId: string }) => d.toolId)).toEqual(['workflow:vendor.acme.summarize']);

    await registry.uninstall({ tenant: 'default', principal: 'tester' }, 'workflow-chain-pack', 'vendor.acme.presets');
    const after = await t.http('GET', '/v1/tools?source=workflow', { token: reader });
    expect(after.body).toEqual([]);
  });

  it('refuses a malformed pack with 422 and installs nothing', async () => {
    const registry = t.moduleRef.get(ArtifactRegistryService);
    await expect(registry.install('node-pack', { name: 'bad' }, { tenant: 'default', principal: 'tester' }, 'test')).rejects.toMatchObject({ status: 422 });
    const dup = { ...NODE_PACK, name: 'vendor.acme.dup', nodes: [NODE_PACK.nodes[0], NODE_PACK.nodes[0]] };
    await expect(registry.install('node-pack', dup, { tenant: 'default', principal: 'tester' }, 'test')).rejects.toMatchObject({ status: 422 });
  });

  it('answers the compact view with the same id set and structural input schemas', async () => {
    const std = await t.http('GET', '/v1/tools', { token: reader });
    const compact = await t.http('GET', '/v1/tools?view=compact', { token: reader });
    expect(compact.status).toBe(200);
    expect(Object.keys(compact.body)).toEqual(['tools']);
    expect(compact.body.tools.map((d: { toolId: string }) => d.toolId)).toEqual(std.body.map((d: { toolId: string }) => d.toolId));
    for (const d of compact.body.tools) {
      expect(schemas.validate('compact-tool-descriptor', d)).toEqual([]);
    }
    const one = await t.http('GET', '/v1/tools/x-host-openwop-echo?view=compact', { token: reader });
    expect(one.status).toBe(200);
    expect(Object.keys(one.body).sort()).toEqual(['description', 'inputSchema', 'safetyTier', 'source', 'title', 'toolId']);
    const other = await t.http('GET', '/v1/tools?view=whatever', { token: reader });
    expect(other.text).toBe(std.text);
  });

  it('refuses a malformed source filter and a repeated view', async () => {
    const bad = await t.http('GET', '/v1/tools?source=nonsense', { token: reader });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'validation_error' });
    const twice = await t.http('GET', '/v1/tools?view=compact&view=standard', { token: reader });
    expect(twice.status).toBe(400);
    expect(twice.body).toMatchObject({ error: 'validation_error' });
  });

  it('has no write methods on the catalog', async () => {
    const res = await t.http('POST', '/v1/tools', { token: reader, body: {} });
    expect([404, 405]).toContain(res.status);
  });

  it('advertises toolCatalog with only the projecting sources', async () => {
    const res = await t.http('GET', '/.well-known/openwop');
    const { sources, ...rest } = res.body.toolCatalog;
    expect(rest).toEqual({ supported: true, sessionLifecycle: true, compactView: true });
    expect(sources).toEqual(expect.arrayContaining(['node-pack', 'workflow', 'host-extension']));
    // No MCP server is configured here: mcp projects nothing and is not advertised.
    expect(sources).not.toContain('mcp');
    // connector belongs to the connections capability, which decides through projects().
    expect(schemas.validate('capabilities', res.body)).toEqual([]);
  });

  it('reports no degradation when every source answers', async () => {
    await t.moduleRef.get(ToolCatalogService).list({ tenant: 'default', principal: 'x', scopes: new Set(), kind: 'system' });
    const health = t.moduleRef.get(HealthService).snapshot();
    expect(health['tool-catalog']?.ok).toBe(true);
  });
});
