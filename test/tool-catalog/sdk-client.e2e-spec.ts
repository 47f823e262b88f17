import { createTestApp, TestApp } from '../support/test-app';

/** SDK proof: a client generated from the committed OpenAPI document drives the catalog. */
describe('tool catalog through the generated OpenAPI client (e2e)', () => {
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    t = await createTestApp({ configFile: { tools: { hostExtensions: [{ toolId: 'x-host-acme-lookup', title: 'Lookup', safetyTier: 'read' }] } } });
    token = await t.key({ scopes: ['tools:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('lists, reads one by id (standard and compact) and gets a typed 404 envelope', async () => {
    const api = t.api(token);
    const list = await api.GET('/v1/tools', {});
    expect(list.response.status).toBe(200);
    expect(Array.isArray(list.data)).toBe(true);
    const ids = (list.data as Array<{ toolId: string }>).map((d) => d.toolId);
    expect(ids).toEqual(['x-host-acme-lookup', 'x-host-openwop-echo']);

    // The compact view has its own typed operation; it answers the same bytes as the protocol's `?view=compact`.
    const compact = await api.GET('/v1/compact-tools', {});
    expect(compact.response.status).toBe(200);
    expect(compact.data?.tools.map((d) => d.toolId)).toEqual(ids);
    const wire = await t.http('GET', '/v1/tools?view=compact', { token });
    expect(wire.body).toEqual(compact.data);
    expect(wire.headers.etag).toBe(compact.response.headers.get('etag'));
    const oneCompact = await api.GET('/v1/compact-tools/{toolId}', { params: { path: { toolId: 'x-host-acme-lookup' } } });
    expect(oneCompact.data).toEqual((await t.http('GET', '/v1/tools/x-host-acme-lookup?view=compact', { token })).body);
    expect(oneCompact.data?.toolId).toBe('x-host-acme-lookup');
    const missingCompact = await api.GET('/v1/compact-tools/{toolId}', { params: { path: { toolId: 'mcp:nope.nothing' } } });
    expect(missingCompact.response.status).toBe(404);

    const one = await api.GET('/v1/tools/{toolId}', { params: { path: { toolId: 'x-host-acme-lookup' } } });
    expect(one.data).toEqual({ toolId: 'x-host-acme-lookup', source: 'host-extension', title: 'Lookup', safetyTier: 'read' });

    const missing = await api.GET('/v1/tools/{toolId}', { params: { path: { toolId: 'mcp:nope.nothing' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error).toEqual({ error: 'not_found', message: expect.any(String) });
  });
});
