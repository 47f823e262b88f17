import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { createTestApp, TestApp } from '../support/test-app';

const FIXTURES = path.resolve(__dirname, '../fixtures/connection-packs');
const fixture = (name: string): Record<string, any> => JSON.parse(fs.readFileSync(path.join(FIXTURES, `connection-pack-${name}.json`), 'utf8'));
const registrySchema = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../schemas/openwop/v2/connection-provider-registry.schema.json'), 'utf8'));
const validRegistry = new Ajv2020({ strict: false, allErrors: true }).compile(registrySchema);

const FIRST = 'core.openwop.connections.acme-widgets';
const RIVAL = 'core.openwop.connections.acme-widgets-rival';
const V2 = { 'OpenWOP-Version': '2' };

/** Connections at major 2 (spec v2 connection-packs.md §Provider identity, RFC 0233 registry read). */
describe('connections v2: provider identity and the provider registry', () => {
  let t: TestApp;
  let admin: string;
  let other: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_PROTOCOL_MAJORS: '1,2' } });
    admin = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['connections:read', 'connections:manage'] });
    other = await t.key({ tenant: 'globex', principal: 'eve', scopes: ['connections:read', 'connections:manage'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  const install = (manifest: unknown, headers: Record<string, string> = V2, token = admin) =>
    t.http('POST', '/conformance/seams/sample/connection-packs/install', { token, body: { manifest }, headers });

  it('the v2 root advertises connections with packsSupported and providerRead (no supported flag)', async () => {
    const r = await t.http('GET', '/.well-known/openwop', { headers: V2 });
    expect(r.body.connections).toEqual({ status: 'experimental', since: '2.0', until: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/), witness: 'witnessable-gated', packsSupported: true, providerRead: true });
  });

  it('a second pack claiming a bare id is refused connection_provider_conflict; the registry holds the id once and names the refusal', async () => {
    expect((await install(fixture('acme-widgets'))).body).toEqual({ installed: true });
    const rival = await install(fixture('acme-widgets-rival'));
    expect(rival.body.installed).toBe(false);
    expect(rival.body.errors.map((e: { code: string }) => e.code)).toContain('connection_provider_conflict');
    // A byte-identical re-publish of the holder still succeeds (the idempotent short-circuit comes first).
    expect((await install(fixture('acme-widgets'))).body).toEqual({ installed: true });

    const reg = await t.http('GET', '/connection-providers', { token: admin, headers: V2 });
    expect(reg.status).toBe(200);
    expect(validRegistry(reg.body)).toBe(true);
    const ids = reg.body.providers.map((p: { id: string }) => p.id);
    expect(ids).toEqual([...new Set(ids)].sort());
    expect(reg.body.providers).toEqual(expect.arrayContaining([{ id: 'acme-widgets', source: 'pack', packName: FIRST }, { id: 'github', source: 'builtin' }, { id: 'slack', source: 'builtin' }]));
    expect(reg.body.refusals).toEqual([{ packName: RIVAL, providerId: 'acme-widgets', code: 'connection_provider_conflict', heldBy: FIRST }]);
    // Content-free: no endpoint, scope catalog or credential.
    expect(JSON.stringify(reg.body)).not.toMatch(/https?:|apiHosts|scopes|credential/);
    // Another tenant's registry is its own.
    const theirs = await t.http('GET', '/connection-providers', { token: other, headers: V2 });
    expect(theirs.body.refusals).toEqual([]);
    expect(theirs.body.providers.find((p: { id: string }) => p.id === 'acme-widgets')).toBeUndefined();
  });

  it('the qualified form resolves only to the named pack; a bare id to its one definition', async () => {
    const named = await t.http('GET', `/connection-providers/acme-widgets?pack=${encodeURIComponent(FIRST)}`, { token: admin, headers: V2 });
    expect(named.status).toBe(200);
    expect(named.body).toEqual({ id: 'acme-widgets', source: 'pack', packName: FIRST });
    const rival = await t.http('GET', `/connection-providers/acme-widgets?pack=${encodeURIComponent(RIVAL)}`, { token: admin, headers: V2 });
    expect(rival.status).toBe(404);
    expect(rival.body.error).toBe('connection_provider_unresolved');
    const bare = await t.http('GET', '/connection-providers/acme-widgets', { token: admin, headers: V2 });
    expect(bare.body).toEqual({ id: 'acme-widgets', source: 'pack', packName: FIRST });
    expect((await t.http('GET', '/connection-providers/slack', { token: admin })).body).toEqual({ id: 'slack', source: 'builtin' });
    expect((await t.http('GET', '/connection-providers/no-such-provider', { token: admin })).status).toBe(404);
    const seam = await t.http('POST', '/conformance/seams/sample/connection-packs/resolve', { token: admin, body: { provider: `${FIRST}#acme-widgets` }, headers: V2 });
    expect(seam.body).toMatchObject({ resolved: true, source: 'pack', packName: FIRST });
  });

  it('at major 2 a pack claiming a built-in id is refused too (no version precedence); v1 keeps its precedence rule', async () => {
    const github = fixture('github');
    const refused = await install(github);
    expect(refused.body.installed).toBe(false);
    expect(refused.body.errors.map((e: { code: string }) => e.code)).toContain('connection_provider_conflict');
    const reg = await t.http('GET', '/connection-providers', { token: admin });
    expect(reg.body.refusals).toContainEqual({ packName: github.name, providerId: 'github', code: 'connection_provider_conflict', heldBy: 'builtin' });
    expect(reg.body.providers).toContainEqual({ id: 'github', source: 'builtin' });
    // The same manifest through v1: installed, and it resolves as the pack (v1 connection-packs.md version precedence).
    const v1 = await t.http('POST', '/v1/connection-packs', { token: admin, body: github });
    expect(v1.status).toBe(201);
    const after = await t.http('GET', '/connection-providers', { token: admin });
    expect(after.body.providers).toContainEqual({ id: 'github', source: 'pack', packName: github.name });
    expect(after.body.refusals.find((r: { packName: string }) => r.packName === github.name)).toBeUndefined();
  });

  it('needs connections:read', async () => {
    expect((await t.http('GET', '/connection-providers')).status).toBe(401);
    const none = await t.key({ tenant: 'acme', principal: 'carol', scopes: ['runs:read'] });
    expect((await t.http('GET', '/connection-providers', { token: none })).status).toBe(403);
  });
});
