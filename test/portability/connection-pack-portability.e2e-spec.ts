/**
 * Connection packs travel with the estate: a tenant's installed connection pack exports as a `pack`
 * item (refs only), each connection-ref that uses its provider depends on it, and an import installs
 * the pack first through the connection-pack installer (credential-material scan, schema, provider
 * claim), so the imported reference resolves at the destination. The credential itself never
 * travels: not in the bundle, the answers, the events or the logs.
 */
import { randomBytes } from 'node:crypto';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { loadFixture } from '../connections/conformance-driver';
import { createTestApp, TestApp } from '../support/test-app';

const CANARY = `OPENWOP_CRED_CANARY_${randomBytes(6).toString('hex')}`;
const SCOPES = ['connections:read', 'connections:manage', 'portability:export', 'portability:import'];

describe('portability: connection packs', () => {
  let t: TestApp;
  let keyA: string;
  let keyB: string;
  const pack = loadFixture('apihosts-valid'); // provider meta-ads: no built-in, only this pack defines it
  const packRef = `connection-pack:${pack.name}`;
  const texts: string[] = [];
  const http: TestApp['http'] = async (...args) => {
    const r = await t.http(...args);
    texts.push(r.text);
    return r;
  };

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_CREDENTIAL_KEYS: `k1:${randomBytes(32).toString('base64')}` } });
    keyA = await t.key({ tenant: 'cp-a', principal: 'alice', scopes: SCOPES });
    keyB = await t.key({ tenant: 'cp-b', principal: 'bob', scopes: SCOPES });
    expect((await http('POST', '/v1/connection-packs', { token: keyA, body: pack })).status).toBe(201);
    expect((await http('POST', '/v1/connections', { token: keyA, body: { provider: pack.provider.id, name: 'ads', credential: CANARY } })).status).toBe(201);
  });
  afterAll(async () => t?.close());

  it('exports the connection pack as a pack item the connection-ref depends on, without the credential', async () => {
    const r = await http('GET', '/v1/export', { token: keyA });
    expect(r.status).toBe(200);
    expect(SchemaRegistry.shared().validate('export-bundle', r.body)).toEqual([]);
    const packItem = r.body.items.find((i: { ref: string }) => i.ref === packRef);
    expect(packItem).toEqual({ kind: 'pack', ref: packRef, dependsOn: [], payload: pack });
    const conn = r.body.items.find((i: { kind: string }) => i.kind === 'connection-ref');
    expect(conn).toMatchObject({ ref: 'connection:ads', dependsOn: [packRef], payload: { provider: pack.provider.id, credentialRef: expect.stringMatching(/^\[REDACTED:/) } });
    expect(r.text).not.toContain(CANARY);
  });

  it('plans the pack first, imports it into B, and the connection-ref resolves there; re-import is a no-op', async () => {
    const bundle = (await http('GET', '/v1/export', { token: keyA })).body;
    // Bundle order must not matter: the dependency puts the pack first.
    bundle.items.reverse();
    const plan = await http('POST', '/v1/import?dryRun=true', { token: keyB, body: bundle });
    expect(plan.status).toBe(200);
    expect(plan.body.order.indexOf(packRef)).toBeLessThan(plan.body.order.indexOf('connection:ads'));
    expect(plan.body.items).toContainEqual(expect.objectContaining({ ref: packRef, kind: 'pack', action: 'create' }));
    expect(plan.body.secretsToRebind).toEqual([pack.provider.id]);
    expect((await http('GET', '/v1/connection-packs', { token: keyB })).body.packs).toEqual([]);

    const applied = await http('POST', '/v1/import', { token: keyB, body: bundle });
    expect(applied.status).toBe(200);
    expect(applied.body.items).toEqual(
      expect.arrayContaining([expect.objectContaining({ ref: packRef, result: 'created' }), expect.objectContaining({ ref: 'connection:ads', result: 'created' })]),
    );
    const packs = (await http('GET', '/v1/connection-packs', { token: keyB })).body.packs;
    expect(packs).toEqual([expect.objectContaining({ name: pack.name, providerId: pack.provider.id, manifest: pack })]);
    const resolved = await http('GET', `/v1/connection-providers/${pack.provider.id}`, { token: keyB });
    expect(resolved.status).toBe(200);
    expect(resolved.body).toMatchObject({ resolved: true, source: 'pack', packName: pack.name });
    const conns = (await http('GET', '/v1/connections', { token: keyB })).body.connections;
    expect(conns).toEqual([expect.objectContaining({ name: 'ads', provider: pack.provider.id, credentialBound: false })]);
    const egress = await http('POST', `/v1/connection-providers/${pack.provider.id}/egress-check`, { token: keyB, body: { requestHost: 'graph.facebook.com' } });
    expect(egress.body.allowed).toBe(true);

    const again = await http('POST', '/v1/import', { token: keyB, body: bundle });
    expect(again.status).toBe(200);
    expect(again.body.items.map((i: { result: string }) => i.result)).toEqual(again.body.items.map(() => 'skipped'));
  });

  it('runs the connection-pack checks on imported packs: a planted secret or a taken provider refuses the bundle, nothing written', async () => {
    const keyC = await t.key({ tenant: 'cp-c', principal: 'carol', scopes: SCOPES });
    const leaky = structuredClone(pack);
    leaky.provider.auth.clientSecret = CANARY;
    const bundle = { bundleVersion: '1', source: { origin: 'test' }, items: [{ kind: 'pack', ref: 'p', payload: leaky }] };
    const r = await http('POST', '/v1/import?dryRun=true', { token: keyC, body: bundle });
    expect(r.status).toBe(422);
    expect(r.body.error).toBe('bundle_credential_material');

    // A rival pack claiming the provider id an installed pack holds: the dry run shows the conflict
    // (the installer's preflight), and the apply refuses before writing anything.
    const rival = { ...structuredClone(pack), name: `${pack.name}-rival` };
    expect((await http('POST', '/v1/connection-packs', { token: keyC, body: pack })).status).toBe(201);
    const rivalBundle = {
      bundleVersion: '1',
      source: { origin: 'test' },
      items: [
        { kind: 'pack', ref: 'rival', payload: rival },
        { kind: 'connection-ref', ref: 'c', dependsOn: ['rival'], payload: { name: 'rival-conn', provider: pack.provider.id } },
      ],
    };
    const planned = await http('POST', '/v1/import?dryRun=true', { token: keyC, body: rivalBundle });
    expect(planned.status).toBe(200);
    expect(planned.body.conflicts).toEqual([expect.objectContaining({ ref: 'rival', kind: 'pack', reason: expect.stringContaining('connection_provider_conflict') })]);
    const refused = await http('POST', '/v1/import', { token: keyC, body: rivalBundle });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ error: 'bundle_item_invalid', details: { items: [{ ref: 'rival', kind: 'pack' }] } });
    expect((await http('GET', '/v1/connection-packs', { token: keyC })).body.packs.map((p: { name: string }) => p.name)).toEqual([pack.name]);
    expect((await http('GET', '/v1/connections', { token: keyC })).body.connections).toEqual([]);
  });

  it('a batch that fails inside the transaction is replayed item by item to name the failing item; nothing is written', async () => {
    const keyD = await t.key({ tenant: 'cp-d', principal: 'dan', scopes: SCOPES });
    expect((await http('POST', '/v1/connection-packs', { token: keyD, body: pack })).status).toBe(201);
    // Three independent packs: one batch. The second and third claim the same new provider id, which
    // no plan can see (nothing holds it yet): the batch's install claims it once and fails on the other.
    const named = (name: string) => {
      const p = structuredClone(pack);
      p.name = `core.openwop.connections.${name}`;
      p.provider.id = 'fresh-ads';
      return p;
    };
    const other = structuredClone(pack);
    other.name = 'core.openwop.connections.other-ads';
    other.provider.id = 'other-ads';
    const bundle = {
      bundleVersion: '1',
      source: { origin: 'test' },
      items: [
        { kind: 'pack', ref: 'other', payload: other },
        { kind: 'pack', ref: 'fresh', payload: named('fresh-ads') },
        { kind: 'pack', ref: 'twin', payload: named('twin-ads') },
      ],
    };
    const plan = await http('POST', '/v1/import?dryRun=true', { token: keyD, body: bundle });
    expect(plan.body.counts).toMatchObject({ create: 3, conflict: 0 });
    const r = await http('POST', '/v1/import', { token: keyD, body: bundle });
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ error: 'bundle_item_failed', details: { ref: 'twin', kind: 'pack', cause: { error: 'connection_provider_conflict' } } });
    expect((await http('GET', '/v1/connection-packs', { token: keyD })).body.packs.map((p: { name: string }) => p.name)).toEqual([pack.name]);
    expect(t.logs.some((l) => l.includes('replaying it item by item'))).toBe(true);
  });

  it('a connection pack keeps the bytes it was installed with: ref, GET and export agree with them', async () => {
    const keyE = await t.key({ tenant: 'cp-e', principal: 'erin', scopes: SCOPES });
    // The manifest's own keys in reverse order, pretty-printed: neither survives a re-serialization.
    const reversed = Object.fromEntries(Object.entries(pack).reverse());
    const text = JSON.stringify(reversed, null, 2);
    const installed = await http('POST', '/v1/connection-packs', { token: keyE, rawBody: text, headers: { 'content-type': 'application/json' } });
    expect(installed.status).toBe(201);
    const { createHash } = await import('node:crypto');
    expect(installed.body.pack.ref).toBe(`sha256:${createHash('sha256').update(text).digest('hex')}`);
    const got = await http('GET', `/v1/connection-packs/${pack.name}`, { token: keyE });
    expect(got.text).toContain(`"manifest":${text}`);
    // Exported in the submitted key order (bundles are JSON documents of their own: whitespace is the bundle's).
    const exported = await http('GET', '/v1/export?kinds=pack', { token: keyE });
    expect(JSON.stringify(exported.body.items[0].payload)).toBe(JSON.stringify(reversed));
  });

  it('the canary credential appears nowhere: answers, events, logs', async () => {
    expect(texts.length).toBeGreaterThan(10);
    expect(texts.filter((x) => x.includes(CANARY))).toEqual([]);
    const [{ n }] = await t.ds.query(`SELECT count(*)::int AS n FROM "event" WHERE "payload"::text LIKE $1`, [`%${CANARY}%`]);
    expect(n).toBe(0);
    expect(t.logs.filter((l) => l.includes(CANARY))).toEqual([]);
  });
});
