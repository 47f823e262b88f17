/**
 * SDK proof: the typed openapi-fetch client generated from the committed OpenAPI document drives the
 * whole connections flow (install a pack, resolve it, create a connection, rotate, delete).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';

const SECRET = `sk-sdk-${randomBytes(12).toString('hex')}`;
const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../fixtures/connection-packs/connection-pack-apihosts-valid.json'), 'utf8'));

describe('connections through the generated client', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_CREDENTIAL_KEYS: `sdk:${randomBytes(32).toString('base64')}` } });
  });
  afterAll(async () => t?.close());

  it('installs, resolves, connects, rotates and deletes', async () => {
    const api = t.api(await t.key({ tenant: 'sdk', scopes: ['connections:read', 'connections:manage'] }));

    const installed = await api.POST('/v1/connection-packs', { body: manifest });
    expect(installed.response.status).toBe(201);
    expect(installed.data?.pack.providerId).toBe('meta-ads');

    const resolved = await api.GET('/v1/connection-providers/{providerId}', { params: { path: { providerId: 'meta-ads' } } });
    expect(resolved.data).toMatchObject({ resolved: true, source: 'pack', packName: 'core.openwop.connections.meta-ads' });

    const plan = await api.GET('/v1/connection-providers/{providerId}/consent-plan', { params: { path: { providerId: 'meta-ads' }, query: { requested: ['read', 'write'] } } });
    expect(plan.data?.steps.map((s) => s.includesWrite)).toEqual([false, true]);

    const created = await api.POST('/v1/connections', { body: { provider: 'meta-ads', name: 'ads', credential: SECRET } });
    expect(created.response.status).toBe(201);
    const id = created.data!.id;

    const rotated = await api.PUT('/v1/connections/{id}/credential', { params: { path: { id } }, body: { credential: `${SECRET}-2` } });
    expect(rotated.data?.credentialRef).toBe(created.data?.credentialRef);

    const listed = await api.GET('/v1/connections');
    expect(listed.data?.connections.map((c) => c.name)).toEqual(['ads']);
    expect(JSON.stringify(listed.data)).not.toContain(SECRET);

    const unknown = await api.POST('/v1/connections', { body: { provider: 'nobody', name: 'x', credential: SECRET } });
    expect(unknown.error).toMatchObject({ error: 'connection_provider_unresolved' });

    const deleted = await api.DELETE('/v1/connections/{id}', { params: { path: { id } } });
    expect(deleted.response.status).toBe(204);
    const removed = await api.DELETE('/v1/connection-packs/{name}', { params: { path: { name: 'core.openwop.connections.meta-ads' } } });
    expect(removed.response.status).toBe(204);
  });
});
