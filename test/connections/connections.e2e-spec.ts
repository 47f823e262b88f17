import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { ConnectionsService } from '../../src/capabilities/connections/connections/connections.service';
import { CredentialStoreService } from '../../src/capabilities/connections/credentials/credential-store.service';

const FIXTURES = path.resolve(__dirname, '../fixtures/connection-packs');
const fixture = (name: string): Record<string, any> => JSON.parse(fs.readFileSync(path.join(FIXTURES, `connection-pack-${name}.json`), 'utf8'));
const KEY_B = randomBytes(32).toString('base64');

/** Planted in every credential this suite stores; must never appear in a response body or log line. */
const SECRET = `sk-planted-${randomBytes(12).toString('hex')}`;
const ROTATED = `ghp_rotated${randomBytes(12).toString('hex')}`;

describe('connections (RFC 0095 packs, RFC 0046 credentials)', () => {
  let t: TestApp;
  let admin: string;
  let reader: string;
  let otherTenant: string;
  const bodies: string[] = [];

  const http = async (method: string, url: string, opts: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}) => {
    const r = await t.http(method, url, opts);
    bodies.push(r.text);
    return r;
  };

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_CREDENTIAL_KEYS: `k2:${KEY_B}` } });
    admin = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['connections:read', 'connections:manage', 'tools:read'] });
    reader = await t.key({ tenant: 'acme', principal: 'bob', scopes: ['connections:read'] });
    otherTenant = await t.key({ tenant: 'globex', principal: 'eve', scopes: ['connections:read', 'connections:manage', 'tools:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  describe('connection packs', () => {
    it('installs a pack (201), re-installs identically (200 unchanged), lists and reads it', async () => {
      const first = await http('POST', '/v1/connection-packs', { token: admin, body: fixture('github') });
      expect(first.status).toBe(201);
      expect(first.body).toMatchObject({ outcome: 'created', pack: { name: 'core.openwop.connections.github', version: '1.0.0', providerId: 'github' } });
      expect(first.body.pack.ref).toMatch(/^sha256:[0-9a-f]{64}$/);
      const again = await http('POST', '/v1/connection-packs', { token: admin, body: fixture('github') });
      expect(again.status).toBe(200);
      expect(again.body.outcome).toBe('unchanged');
      const list = await http('GET', '/v1/connection-packs', { token: reader });
      expect(list.status).toBe(200);
      expect(list.body.packs.map((p: { name: string }) => p.name)).toEqual(['core.openwop.connections.github']);
      const one = await http('GET', '/v1/connection-packs/core.openwop.connections.github', { token: reader });
      expect(one.status).toBe(200);
      expect(one.body.manifest).toEqual(fixture('github'));
    });

    it('resolves the installed pack as the provider (equal version outranks the built-in)', async () => {
      const r = await http('GET', '/v1/connection-providers/github', { token: reader });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ resolved: true, providerId: 'github', source: 'pack', packName: 'core.openwop.connections.github', version: '1.0.0' });
      const builtin = await http('GET', '/v1/connection-providers/slack', { token: reader });
      expect(builtin.body).toMatchObject({ resolved: true, source: 'builtin' });
      const unknown = await http('GET', '/v1/connection-providers/no-such-provider', { token: reader });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error).toBe('connection_provider_unresolved');
      const malformed = await http('GET', '/v1/connection-providers/NOT_AN_ID', { token: reader });
      expect(malformed.status).toBe(400);
      expect(malformed.body.error).toBe('validation_error');
      const all = await http('GET', '/v1/connection-providers', { token: reader });
      expect(all.body.providers.map((p: { providerId: string }) => p.providerId)).toEqual(expect.arrayContaining(['github', 'slack']));
    });

    it('refuses an older pack than the built-in with connection_provider_conflict at resolution', async () => {
      const old = fixture('github');
      old.name = 'private.acme.slack-old';
      old.version = '0.9.0';
      old.provider.id = 'slack';
      expect((await http('POST', '/v1/connection-packs', { token: admin, body: old })).status).toBe(201);
      const r = await http('GET', '/v1/connection-providers/slack', { token: reader });
      expect(r.status).toBe(409);
      expect(r.body.error).toBe('connection_provider_conflict');
      expect((await http('DELETE', '/v1/connection-packs/private.acme.slack-old', { token: admin })).status).toBe(204);
      expect((await http('GET', '/v1/connection-providers/slack', { token: reader })).body.source).toBe('builtin');
    });

    it('refuses a second pack claiming an installed provider id (409), and nothing else changes', async () => {
      const rival = fixture('github');
      rival.name = 'community.someone.github-rival';
      rival.version = '9.0.0';
      const r = await http('POST', '/v1/connection-packs', { token: admin, body: rival });
      expect(r.status).toBe(409);
      expect(r.body).toMatchObject({ error: 'connection_provider_conflict', details: { providerId: 'github', heldBy: 'core.openwop.connections.github' } });
      expect((await http('GET', '/v1/connection-packs/community.someone.github-rival', { token: reader })).status).toBe(404);
    });

    it.each([
      ['a planted API key deep in the manifest', (m: Record<string, any>) => (m.provider.auth.scopes.read[0].apiKey = 'abc'), 'connection_pack_credential_material', '/provider/auth/scopes/read/0/apiKey'],
      ['a client secret', (m: Record<string, any>) => (m.provider.auth.clientSecret = SECRET), 'connection_pack_credential_material', '/provider/auth/clientSecret'],
      ['a credential-shaped value', (m: Record<string, any>) => (m.description = `token ${SECRET}`), 'connection_pack_credential_material', '/description'],
      ['a non-https endpoint', (m: Record<string, any>) => (m.provider.auth.endpoints.authorize = 'http://github.com/login'), 'validation_error', '/provider/auth/endpoints/authorize'],
      ['two reach keys', (m: Record<string, any>) => (m.provider.reach.integration = { node: 'core.openwop.integration.github' }), 'validation_error', '/provider/reach'],
      ['a wrong kind', (m: Record<string, any>) => (m.kind = 'node'), 'pack_kind_invalid', '/kind'],
      ['an apiHosts wildcard', (m: Record<string, any>) => (m.provider.apiHosts = ['*.github.com']), 'connection_pack_invalid_api_host', '/provider/apiHosts/0'],
      ['an oversized manifest', (m: Record<string, any>) => (m.keywords = Array.from({ length: 50 }, () => 'k'.repeat(64)), m.provider.consumerNodes = Array.from({ length: 4000 }, (_, i) => `core.openwop.node-${i}`)), 'connection_pack_too_large', ''],
    ])('refuses %s with 422 and installs nothing', async (_label, mutate, code, pointer) => {
      const m = fixture('github');
      m.name = 'private.acme.rejected';
      m.provider.id = 'rejected-probe';
      mutate(m);
      const r = await http('POST', '/v1/connection-packs', { token: admin, body: m });
      expect(r.status).toBe(422);
      expect(r.body.error).toBe(code);
      expect(r.body.details.errors).toContainEqual(expect.objectContaining({ code, path: pointer }));
      expect(r.text).not.toContain(SECRET);
      expect((await http('GET', '/v1/connection-packs/private.acme.rejected', { token: reader })).status).toBe(404);
      expect((await http('GET', '/v1/connection-providers/rejected-probe', { token: reader })).status).toBe(404);
    });

    it('refuses a body that is not a manifest object with 400', async () => {
      for (const body of [[fixture('github')], 'manifest', 42]) {
        const r = await http('POST', '/v1/connection-packs', { token: admin, body });
        expect(r.status).toBe(400);
        expect(r.body.error).toBe('validation_error');
      }
      const broken = await http('POST', '/v1/connection-packs', { token: admin, rawBody: '{"name":', headers: { 'content-type': 'application/json' } });
      expect(broken.status).toBe(400);
    });

    it('requires connections:manage to install and connections:read to list (fail closed)', async () => {
      const r = await http('POST', '/v1/connection-packs', { token: reader, body: fixture('apihosts-valid') });
      expect(r.status).toBe(403);
      const none = await t.key({ tenant: 'acme', scopes: ['runs:read'] });
      expect((await http('GET', '/v1/connection-packs', { token: none })).status).toBe(403);
      expect((await http('GET', '/v1/connection-packs')).status).toBe(401);
    });

    it('keeps tenants apart: another tenant sees no pack and resolves only built-ins', async () => {
      expect((await http('GET', '/v1/connection-packs', { token: otherTenant })).body.packs).toEqual([]);
      expect((await http('GET', '/v1/connection-packs/core.openwop.connections.github', { token: otherTenant })).status).toBe(404);
      expect((await http('GET', '/v1/connection-providers/github', { token: otherTenant })).body.source).toBe('builtin');
      expect((await http('DELETE', '/v1/connection-packs/core.openwop.connections.github', { token: otherTenant })).status).toBe(404);
      // The other tenant may install its own pack for the same provider id.
      expect((await http('POST', '/v1/connection-packs', { token: otherTenant, body: fixture('github') })).status).toBe(201);
    });

    it('serves consent plans (read first, write later) and egress checks', async () => {
      expect((await http('POST', '/v1/connection-packs', { token: admin, body: fixture('apihosts-valid') })).status).toBe(201);
      const plan = await http('GET', '/v1/connection-providers/github/consent-plan?requested=read,write', { token: reader });
      expect(plan.status).toBe(200);
      expect(plan.body.steps.map((s: { includesWrite: boolean }) => s.includesWrite)).toEqual([false, true]);
      expect(plan.body.steps[0].groups).toEqual([{ key: 'repo.read', label: 'Read repositories', access: 'read', scopes: ['read:org', 'read:user'] }]);
      const bad = await http('GET', '/v1/connection-providers/github/consent-plan?requested=admin', { token: reader });
      expect(bad.status).toBe(400);
      const allowed = await http('POST', '/v1/connection-providers/meta-ads/egress-check', { token: reader, body: { requestHost: 'graph.facebook.com' } });
      expect(allowed.body).toEqual({ allowed: true, matched: 'facebook.com' });
      const denied = await http('POST', '/v1/connection-providers/meta-ads/egress-check', { token: reader, body: { requestHost: 'facebook.com.evil.com' } });
      expect(denied.body).toEqual({ allowed: false, code: 'host_not_allowed' });
      const noHosts = await http('POST', '/v1/connection-providers/github/egress-check', { token: reader, body: { requestHost: 'api.github.com' } });
      expect(noHosts.body).toEqual({ allowed: false, code: 'no_api_hosts' });
      const malformed = await http('POST', '/v1/connection-providers/github/egress-check', { token: reader, body: { requestHost: 42 } });
      expect(malformed.status).toBe(400);
    });
  });

  describe('connections and credentials', () => {
    let connectionId: string;

    it('creates a connection whose credential is never returned', async () => {
      const r = await http('POST', '/v1/connections', { token: admin, body: { provider: 'github', name: 'github-ci', credential: SECRET } });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({ name: 'github-ci', provider: 'github', credentialBound: true, origin: 'api', createdBy: 'alice' });
      expect(r.body.credentialRef).toMatch(/^cred:[0-9a-f-]{36}$/);
      expect(Object.keys(r.body).sort()).toEqual(['createdAt', 'createdBy', 'credentialBound', 'credentialRef', 'id', 'name', 'origin', 'previousCredentialExpiresAt', 'provider', 'updatedAt']);
      connectionId = r.body.id;
      const one = await http('GET', `/v1/connections/${connectionId}`, { token: reader });
      expect(one.body).toEqual(r.body);
      const list = await http('GET', '/v1/connections', { token: reader });
      expect(list.body.connections).toEqual([r.body]);
    });

    it('stores the credential encrypted (AES-256-GCM, key id kept) and bound to its row', async () => {
      const rows = (await t.ds.query(`SELECT "tenant", "key_provider", "key_id", "sealed" FROM "credential"`)) as Array<{ tenant: string; key_provider: string; key_id: string; sealed: Buffer }>;
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ tenant: 'acme', key_provider: 'config', key_id: 'k2' });
      expect(rows[0].sealed.includes(Buffer.from(SECRET))).toBe(false);
      const dump = JSON.stringify(await t.ds.query(`SELECT * FROM "connection"`)) + JSON.stringify(await t.ds.query(`SELECT * FROM "event"`));
      expect(dump).not.toContain(SECRET);
      const store = t.moduleRef.get(CredentialStoreService);
      const credentialId = (await http('GET', `/v1/connections/${connectionId}`, { token: reader })).body.credentialRef.slice(5);
      await expect(store.open('acme', credentialId)).resolves.toBe(SECRET);
      // A ciphertext moved to another tenant does not open.
      await expect(store.open('globex', credentialId)).rejects.toThrow();
    });

    it('hands the credential out only for an allowed egress host', async () => {
      const svc = t.moduleRef.get(ConnectionsService);
      await expect(svc.withCredential({ tenant: 'acme' }, connectionId, 'api.github.com', async () => 'sent')).rejects.toMatchObject({ code: 'egress_host_not_allowed' });
      const meta = await http('POST', '/v1/connections', { token: admin, body: { provider: 'meta-ads', name: 'ads', credential: SECRET } });
      expect(meta.status).toBe(201);
      await expect(svc.withCredential({ tenant: 'acme' }, meta.body.id, 'graph.facebook.com', async (c) => c === SECRET)).resolves.toBe(true);
      await expect(svc.withCredential({ tenant: 'acme' }, meta.body.id, 'evil.com', async () => 'sent')).rejects.toMatchObject({ code: 'egress_host_not_allowed' });
      await expect(svc.withCredential({ tenant: 'globex' }, meta.body.id, 'graph.facebook.com', async () => 'sent')).rejects.toMatchObject({ status: 404 });
    });

    it('rotates the credential write-only: same reference, new value, never read back', async () => {
      const before = await http('GET', `/v1/connections/${connectionId}`, { token: reader });
      const r = await http('PUT', `/v1/connections/${connectionId}/credential`, { token: admin, body: { credential: ROTATED } });
      expect(r.status).toBe(200);
      expect(r.body.credentialRef).toBe(before.body.credentialRef);
      expect(r.text).not.toContain(ROTATED);
      const after = await http('GET', `/v1/connections/${connectionId}`, { token: reader });
      expect(after.text).not.toContain(ROTATED);
      expect(after.text).not.toContain(SECRET);
      const store = t.moduleRef.get(CredentialStoreService);
      await expect(store.open('acme', before.body.credentialRef.slice(5))).resolves.toBe(ROTATED);
      const events = (await t.ds.query(`SELECT "type", "payload" FROM "event" WHERE "stream_key" IN (SELECT "key" FROM "event_stream" WHERE "tenant" = 'acme') AND "type" LIKE 'connection.%' ORDER BY "sequence"`)) as Array<{ type: string; payload: Record<string, unknown> }>;
      expect(events.map((e) => e.type)).toEqual(['connection.created', 'connection.created', 'connection.credential_rotated']);
      expect(JSON.stringify(events)).not.toContain(ROTATED);
    });

    it('refuses malformed connection bodies with 400 and never echoes the credential', async () => {
      const cases: unknown[] = [
        {},
        { provider: 'github', name: 'x' },
        { provider: 'github', name: 'x', credential: '' },
        { provider: 'github', name: 'x', credential: 42 },
        { provider: 'GitHub!', name: 'x', credential: SECRET },
        { provider: 'github', name: '', credential: SECRET },
        { provider: 'github', name: 'x', credential: SECRET, apiKey: SECRET },
        { provider: 'github', name: 'x', credential: 'y'.repeat(16 * 1024 + 1) },
      ];
      for (const body of cases) {
        const r = await http('POST', '/v1/connections', { token: admin, body });
        expect({ body, status: r.status, error: r.body.error }).toEqual({ body, status: 400, error: 'validation_error' });
        expect(r.text).not.toContain(SECRET);
      }
      const rot = await http('PUT', `/v1/connections/${connectionId}/credential`, { token: admin, body: { credential: '' } });
      expect(rot.status).toBe(400);
    });

    it('refuses an unknown provider (404 connection_provider_unresolved) and a duplicate name (409)', async () => {
      const unknown = await http('POST', '/v1/connections', { token: admin, body: { provider: 'no-such-provider', name: 'x', credential: SECRET } });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error).toBe('connection_provider_unresolved');
      const dup = await http('POST', '/v1/connections', { token: admin, body: { provider: 'github', name: 'github-ci', credential: SECRET } });
      expect(dup.status).toBe(409);
      expect(dup.body.error).toBe('connection_exists');
      // Nothing stored by either refusal: two connections' credentials and the one the rotation replaced (in its overlap).
      expect(((await t.ds.query(`SELECT count(*)::int AS n FROM "credential"`)) as Array<{ n: number }>)[0].n).toBe(3);
    });

    it('keeps tenants apart and answers unknown and foreign ids alike (404)', async () => {
      expect((await http('GET', '/v1/connections', { token: otherTenant })).body.connections).toEqual([]);
      const foreign = await http('GET', `/v1/connections/${connectionId}`, { token: otherTenant });
      const unknown = await http('GET', '/v1/connections/00000000-0000-4000-8000-000000000000', { token: otherTenant });
      const garbage = await http('GET', '/v1/connections/not-a-uuid', { token: otherTenant });
      for (const r of [foreign, unknown, garbage]) {
        expect(r.status).toBe(404);
        expect(r.body).toEqual(foreign.body);
      }
      expect((await http('PUT', `/v1/connections/${connectionId}/credential`, { token: otherTenant, body: { credential: 'x' } })).status).toBe(404);
      expect((await http('DELETE', `/v1/connections/${connectionId}`, { token: otherTenant })).status).toBe(404);
      expect((await http('GET', `/v1/connections/${connectionId}`, { token: reader })).status).toBe(200);
      // Same name in another tenant is a different connection.
      expect((await http('POST', '/v1/connections', { token: otherTenant, body: { provider: 'github', name: 'github-ci', credential: SECRET } })).status).toBe(201);
    });

    it('projects connector tools for the tenant\'s connections into the tool catalog', async () => {
      const r = await http('GET', '/v1/tools?source=connector', { token: admin });
      expect(r.status).toBe(200);
      const tools = (r.body as Array<{ toolId: string; source: string; auth?: { credentialRef?: boolean } }>).filter((d) => d.source === 'connector');
      expect(tools.map((d) => d.toolId).sort()).toEqual(['connector:github.repo.read', 'connector:github.repo.write', 'connector:meta-ads.ads.manage', 'connector:meta-ads.ads.read']);
      const registry = SchemaRegistry.shared();
      for (const d of tools) {
        expect(d.auth).toEqual({ credentialRef: true });
        expect(registry.validate('tool-descriptor', d)).toEqual([]);
      }
      expect(r.text).not.toContain('cred:');
      const write = await http('GET', '/v1/tools/connector:github.repo.write', { token: admin });
      expect(write.body).toMatchObject({ safetyTier: 'write' });
      // Another tenant's connections give the other tenant's tools only.
      const other = await http('GET', '/v1/tools?source=connector', { token: otherTenant });
      expect(other.body.map((d: { toolId: string }) => d.toolId).sort()).toEqual(['connector:github.repo.read', 'connector:github.repo.write']);
      expect((await http('GET', '/v1/tools/connector:meta-ads.ads.read', { token: otherTenant })).status).toBe(404);
    });

    it('refuses to uninstall a pack connections depend on, then deletes connection and credential', async () => {
      const inUse = await http('DELETE', '/v1/connection-packs/core.openwop.connections.meta-ads', { token: admin });
      expect(inUse.status).toBe(409);
      expect(inUse.body.error).toBe('connection_pack_in_use');
      const list = (await http('GET', '/v1/connections', { token: admin })).body.connections as Array<{ id: string; name: string }>;
      const ads = list.find((c) => c.name === 'ads')!;
      expect((await http('DELETE', `/v1/connections/${ads.id}`, { token: admin })).status).toBe(204);
      expect((await http('GET', `/v1/connections/${ads.id}`, { token: admin })).status).toBe(404);
      expect((await http('DELETE', '/v1/connection-packs/core.openwop.connections.meta-ads', { token: admin })).status).toBe(204);
      // Left: the github connection's credential and the one its rotation replaced (still in its overlap).
      expect(((await t.ds.query(`SELECT count(*)::int AS n FROM "credential" WHERE "tenant" = 'acme'`)) as Array<{ n: number }>)[0].n).toBe(2);
      const tools = await http('GET', '/v1/tools?source=connector', { token: admin });
      expect(tools.body.map((d: { toolId: string }) => d.toolId)).not.toContain('connector:meta-ads.ads.read');
    });
  });

  describe('discovery', () => {
    it('advertises connections and credentials in a schema-valid document', async () => {
      const r = await http('GET', '/.well-known/openwop');
      expect(r.body.connections).toEqual({ supported: true, packsSupported: true });
      expect(r.body.credentials).toEqual({ supported: true, scopes: ['tenant'], encryptionAtRest: true, rotation: 'two-key-overlap' });
      expect(SchemaRegistry.shared().validate('capabilities', r.body)).toEqual([]);
    });
  });

  it('never wrote a credential value into any response body or log line', () => {
    expect(bodies.length).toBeGreaterThan(50);
    expect(t.logs.length).toBeGreaterThan(0);
    for (const secret of [SECRET, ROTATED, KEY_B]) {
      expect(bodies.filter((b) => b.includes(secret))).toEqual([]);
      expect(t.logs.filter((l) => l.includes(secret))).toEqual([]);
    }
  });
});
