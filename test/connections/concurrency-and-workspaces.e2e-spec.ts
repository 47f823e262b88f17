/**
 * Races and workspace-bound callers: the provider claim holds between concurrent installs (one
 * wins, the other is refused and leaves nothing behind), and connection packs and connections are
 * tenant-wide, so a workspace-bound key sees its tenant's.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';

const github = (): Record<string, any> => JSON.parse(fs.readFileSync(path.resolve(__dirname, '../fixtures/connection-packs/connection-pack-github.json'), 'utf8'));

describe('connections: concurrency and workspaces', () => {
  let t: TestApp;
  let admin: string;
  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_CREDENTIAL_KEYS: `c1:${randomBytes(32).toString('base64')}` } });
    admin = await t.key({ tenant: 'race', scopes: ['connections:read', 'connections:manage'] });
  });
  afterAll(async () => t?.close());

  it('two packs racing for one provider id: exactly one is installed', async () => {
    const packs = ['community.racer.one', 'community.racer.two', 'community.racer.three'].map((name) => ({ ...github(), name }));
    const results = await Promise.all(packs.map((body) => t.http('POST', '/v1/connection-packs', { token: admin, body })));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.error).toBe('connection_provider_conflict');
    const installed = (await t.http('GET', '/v1/connection-packs', { token: admin })).body.packs;
    expect(installed).toHaveLength(1);
    const winner = results.find((r) => r.status === 201)!.body.pack.name;
    expect((await t.http('GET', '/v1/connection-providers/github', { token: admin })).body).toMatchObject({ source: 'pack', packName: winner });
  });

  it('two connections racing for one name: exactly one is created, one credential is stored', async () => {
    const body = { provider: 'github', name: 'same-name', credential: 'value-1234' };
    const results = await Promise.all([1, 2, 3].map(() => t.http('POST', '/v1/connections', { token: admin, body })));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    const rows = (await t.ds.query(`SELECT count(*)::int AS n FROM "credential" WHERE "tenant" = 'race'`)) as Array<{ n: number }>;
    expect(rows[0].n).toBe(1);
  });

  it('a workspace-bound key sees its tenant\'s packs and connections but cannot change them (they are tenant-wide)', async () => {
    const ws = await t.key({ tenant: 'race', workspace: 'team-a', scopes: ['connections:read', 'connections:manage'] });
    expect((await t.http('GET', '/v1/connection-packs', { token: ws })).body.packs).toHaveLength(1);
    const listed = (await t.http('GET', '/v1/connections', { token: ws })).body.connections as Array<{ id: string; name: string }>;
    expect(listed.map((c) => c.name)).toEqual(['same-name']);
    const m = github();
    m.name = 'private.race.workspace-pack';
    m.provider.id = 'workspace-probe';
    const refused = await t.http('POST', '/v1/connection-packs', { token: ws, body: m });
    expect([refused.status, refused.body.error, refused.body.details]).toEqual([403, 'forbidden', { tenantLevel: true }]);
    expect((await t.http('GET', '/v1/connection-providers/workspace-probe', { token: admin })).status).toBe(404);
    expect((await t.http('PUT', `/v1/connections/${listed[0].id}/credential`, { token: ws, body: { credential: 'ghp_overwritten' } })).status).toBe(403);
    expect((await t.http('DELETE', `/v1/connections/${listed[0].id}`, { token: ws })).status).toBe(403);
    expect((await t.http('GET', `/v1/connections/${listed[0].id}`, { token: admin })).status).toBe(200);
  });
});
