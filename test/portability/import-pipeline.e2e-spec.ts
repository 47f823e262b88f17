/**
 * The bundle pipeline end to end, through a plugin-contributed `roster` kind (the same extension
 * points a third party uses): round trip between tenants, idempotency, races, dry-run without
 * writes, all-or-nothing apply, scopes after the bundle checks, malformed input.
 */
import * as path from 'node:path';
import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';
import { EventLogService, HOST_STREAM } from '../../src/platform/events/event-log.service';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { createTestApp, TestApp } from '../support/test-app';

const PLUGIN = path.join(__dirname, 'fixtures', 'roster-plugin.ts');
const roster = (id: string, extra: Record<string, unknown> = {}) => ({ id, members: ['alice', 'bob'], ...extra });
const bundleOf = (items: unknown[], origin = 'https://host-a.example') => ({ bundleVersion: '1', source: { origin, originPrincipal: 'someone-else' }, items });
const rosterItem = (ref: string, payload: Record<string, unknown>, dependsOn: string[] = []) => ({ kind: 'roster', ref, dependsOn, payload });

describe('portability: import pipeline', () => {
  let t: TestApp;
  let registry: ArtifactRegistryService;
  let events: EventLogService;
  let keyA: string;
  let keyB: string;
  let keyC: string;
  let noScopeB: string;
  let exportOnlyB: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_PLUGINS: PLUGIN, OPENWOP_PLUGINS_STRICT: 'true' } });
    registry = t.moduleRef.get(ArtifactRegistryService);
    events = t.moduleRef.get(EventLogService);
    // An importer also holds what installing the items directly needs.
    const both = ['portability:export', 'portability:import', 'packs:publish'];
    keyA = await t.key({ tenant: 'tenant-a', principal: 'alice', scopes: both });
    keyB = await t.key({ tenant: 'tenant-b', principal: 'bob', scopes: both });
    keyC = await t.key({ tenant: 'tenant-c', principal: 'carol', scopes: both });
    noScopeB = await t.key({ tenant: 'tenant-b', principal: 'mallory', scopes: ['runs:read'] });
    exportOnlyB = await t.key({ tenant: 'tenant-b', principal: 'eve', scopes: ['portability:export'] });
    const a = { tenant: 'tenant-a', principal: 'alice' };
    await registry.install('test-roster', roster('sales'), a, 'api');
    await registry.install('test-roster', roster('support', { needsCredential: 'slack' }), a, 'api');
  });
  afterAll(async () => t?.close());

  const counts = async () => {
    const [{ artifacts }] = await t.ds.query(`SELECT count(*)::int AS artifacts FROM installed_artifact`);
    const [{ events: n }] = await t.ds.query(`SELECT count(*)::int AS events FROM event`);
    return { artifacts, events: n };
  };
  const importEvents = (tenant: string) => events.read({ tenant }, HOST_STREAM, { type: 'import.applied' });

  it('advertises roster among the portable kinds (provider and installer mounted)', async () => {
    const res = await t.http('GET', '/.well-known/openwop');
    expect(res.body.portability.kinds).toContain('roster');
  });

  it('round trip: tenant A exports, tenant B imports, re-owned with local ids; re-import is a no-op', async () => {
    const exported = await t.http('GET', '/v1/export', { token: keyA });
    expect(exported.status).toBe(200);
    expect(SchemaRegistry.shared().validate('export-bundle', exported.body)).toEqual([]);
    expect(exported.body.source).toMatchObject({ origin: 'openwop-host:tenant-a', originPrincipal: 'alice' });
    expect(exported.body.items.map((i: { ref: string }) => i.ref).sort()).toEqual(['test-roster:sales', 'test-roster:support']);

    const plan = await t.http('POST', '/v1/import?dryRun=true', { token: keyB, body: exported.body });
    expect(plan.status).toBe(200);
    expect(plan.body).toMatchObject({ dryRun: true, counts: { create: 2, update: 0, skip: 0, conflict: 0 }, secretsToRebind: ['slack'] });

    const applied = await t.http('POST', '/v1/import', { token: keyB, body: { bundle: exported.body } });
    expect(applied.status).toBe(200);
    expect(applied.body).toMatchObject({ dryRun: false, counts: { created: 2, updated: 0, skipped: 0, failed: 0 }, secretsToRebind: ['slack'] });

    const inB = await registry.list({ tenant: 'tenant-b' }, ['test-roster']);
    const inA = await registry.list({ tenant: 'tenant-a' }, ['test-roster']);
    expect(inB.map((a) => a.name)).toEqual(['sales', 'support']);
    expect(inB.every((a) => a.installedBy === 'bob' && a.origin === 'import')).toBe(true);
    expect(inB.map((a) => a.id)).not.toEqual(expect.arrayContaining(inA.map((a) => a.id)));
    expect(inB.map((a) => a.ref)).toEqual(inA.map((a) => a.ref));

    const again = await t.http('POST', '/v1/import', { token: keyB, body: exported.body });
    expect(again.body.counts).toEqual({ created: 0, updated: 0, skipped: 2, failed: 0 });
    expect(await registry.list({ tenant: 'tenant-b' }, ['test-roster'])).toHaveLength(2);

    const evs = await importEvents('tenant-b');
    expect(evs).toHaveLength(2);
    const importApplied = { $ref: 'https://openwop.dev/spec/v1/run-event-payloads.schema.json#/$defs/importApplied' };
    SchemaRegistry.shared().validator('run-event-payloads');
    expect(SchemaRegistry.shared().validateWith(importApplied, evs[0].payload)).toEqual([]);
    expect(evs[0].payload).toEqual({ bundleOrigin: 'openwop-host:tenant-a', counts: { created: 2, updated: 0, skipped: 0, failed: 0 }, secretsToRebind: ['slack'] });
  });

  it('changed content is updated, never created twice', async () => {
    const res = await t.http('POST', '/v1/import', { token: keyB, body: bundleOf([rosterItem('r', roster('sales', { members: ['zoe'] }))]) });
    expect(res.status).toBe(200);
    expect(res.body.items).toEqual([expect.objectContaining({ ref: 'r', action: 'updated', result: 'updated' })]);
    expect((await registry.get({ tenant: 'tenant-b' }, 'test-roster', 'sales'))?.content.members).toEqual(['zoe']);
  });

  it('tenants never see each other: B exports only B, A is untouched by B imports', async () => {
    const b = await t.http('GET', '/v1/host/sample/export?kinds=roster', { token: keyB });
    expect(b.body.source.origin).toBe('openwop-host:tenant-b');
    expect(b.body.items.find((i: { ref: string }) => i.ref === 'test-roster:sales').payload.members).toEqual(['zoe']);
    const a = await t.http('GET', '/v1/export', { token: keyA });
    expect(a.body.items.find((i: { ref: string }) => i.ref === 'test-roster:sales').payload.members).toEqual(['alice', 'bob']);
  });

  it('re-owns to the caller\'s workspace; tenant-wide and other-workspace callers do not see it', async () => {
    const w1 = await t.key({ tenant: 'tenant-w', workspace: 'w1', principal: 'wendy', scopes: ['portability:export', 'portability:import', 'packs:publish'] });
    const w2 = await t.key({ tenant: 'tenant-w', workspace: 'w2', principal: 'walt', scopes: ['portability:export'] });
    const tenantWide = await t.key({ tenant: 'tenant-w', principal: 'tina', scopes: ['portability:export'] });
    await registry.install('test-roster', roster('shared'), { tenant: 'tenant-w', principal: 'tina' }, 'api');
    const res = await t.http('POST', '/v1/import', { token: w1, body: bundleOf([rosterItem('r', roster('w1-only'))]) });
    expect(res.body.counts.created).toBe(1);
    const row = await registry.get({ tenant: 'tenant-w', workspace: 'w1' }, 'test-roster', 'w1-only');
    expect([row?.workspace, row?.installedBy]).toEqual(['w1', 'wendy']);
    const refs = async (token: string) => (await t.http('GET', '/v1/export', { token })).body.items.map((i: { ref: string }) => i.ref).sort();
    expect(await refs(w1)).toEqual(['test-roster:shared', 'test-roster:w1-only']);
    expect(await refs(w2)).toEqual(['test-roster:shared']);
    expect(await refs(tenantWide)).toEqual(['test-roster:shared']);
  });

  it('dry-run writes nothing: no rows, no events', async () => {
    const before = await counts();
    const res = await t.http('POST', '/v1/host/sample/import?dryRun=1', {
      token: keyC,
      body: { bundle: bundleOf([rosterItem('x', roster('x')), rosterItem('y', roster('y'), ['x'])]) },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ dryRun: true, order: ['x', 'y'], counts: { create: 2 } });
    expect(await counts()).toEqual(before);
    expect(await importEvents('tenant-c')).toEqual([]);
  });

  it('racing applies of one bundle create each item exactly once', async () => {
    const bundle = bundleOf(Array.from({ length: 8 }, (_, i) => rosterItem(`r${i}`, roster(`race-${i}`))));
    const results = await Promise.all([1, 2, 3].map(() => t.http('POST', '/v1/import', { token: keyC, body: bundle })));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    const created = results.reduce((n, r) => n + r.body.counts.created, 0);
    const skipped = results.reduce((n, r) => n + r.body.counts.skipped, 0);
    expect([created, skipped]).toEqual([8, 16]);
    expect(await registry.list({ tenant: 'tenant-c' }, ['test-roster'])).toHaveLength(8);
  });

  it('apply is all or nothing: an item failing inside the transaction rolls everything back', async () => {
    const before = await counts();
    const res = await t.http('POST', '/v1/import', {
      token: keyC,
      body: bundleOf([rosterItem('ok', roster('fresh-1')), rosterItem('bad', roster('fresh-2', { failOnInstall: true }), ['ok'])]),
    });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ error: 'bundle_item_failed', details: { ref: 'bad', kind: 'roster' } });
    expect(res.body.message).toContain('"bad"');
    expect(await counts()).toEqual(before);
    expect(await registry.get({ tenant: 'tenant-c' }, 'test-roster', 'fresh-1')).toBeUndefined();
  });

  it('every item is checked before the first write: a malformed or unsupported item refuses the bundle', async () => {
    const before = await counts();
    const malformed = await t.http('POST', '/v1/import', { token: keyC, body: bundleOf([rosterItem('ok', roster('fresh-3')), rosterItem('broken', { id: 'Bad Id' })]) });
    expect(malformed.status).toBe(422);
    expect(malformed.body).toMatchObject({ error: 'bundle_item_invalid', details: { items: [{ ref: 'broken', kind: 'roster' }] } });
    const unsupported = await t.http('POST', '/v1/import', { token: keyC, body: bundleOf([{ kind: 'org-chart', ref: 'oc', payload: {} }]) });
    expect(unsupported.status).toBe(422);
    expect(unsupported.body.details.items[0]).toMatchObject({ ref: 'oc', kind: 'org-chart' });
    expect(await counts()).toEqual(before);
    // The dry run shows the same refusals as conflicts instead of failing.
    const plan = await t.http('POST', '/v1/import?dryRun=true', { token: keyC, body: bundleOf([rosterItem('broken', { id: 'Bad Id' }), { kind: 'org-chart', ref: 'oc', payload: {} }]) });
    expect(plan.body.counts).toEqual({ create: 0, update: 0, skip: 0, conflict: 2 });
  });

  it('two items that install the same entity are a conflict', async () => {
    const res = await t.http('POST', '/v1/import?dryRun=true', { token: keyC, body: bundleOf([rosterItem('a', roster('twin')), rosterItem('b', roster('twin'))]) });
    expect(res.body.items[1]).toMatchObject({ ref: 'b', action: 'conflict' });
  });

  describe('scopes come after the bundle checks', () => {
    const leaky = bundleOf([rosterItem('c1', { id: 'x', members: [], apiKey: 'sk-conformance-canary' })]);
    const cyclic = bundleOf([rosterItem('a', roster('a'), ['b']), rosterItem('b', roster('b'), ['a'])]);

    it('a caller without portability:import gets 422 for a leaky or cyclic bundle, 403 for a valid one', async () => {
      for (const dry of ['?dryRun=true', '']) {
        const l = await t.http('POST', `/v1/import${dry}`, { token: noScopeB, body: leaky });
        expect([l.status, l.body.error]).toEqual([422, 'bundle_credential_material']);
        expect(l.text).not.toContain('sk-conformance-canary');
        const c = await t.http('POST', `/v1/import${dry}`, { token: noScopeB, body: cyclic });
        expect([c.status, c.body.error]).toEqual([422, 'bundle_dependency_cycle']);
        const ok = await t.http('POST', `/v1/import${dry}`, { token: noScopeB, body: bundleOf([rosterItem('a', roster('a'))]) });
        expect([ok.status, ok.body.error]).toEqual([403, 'forbidden']);
        expect(ok.body.details).toEqual({ requiredScopes: ['portability:import'], missingScopes: ['portability:import'] });
      }
      const e = await t.http('POST', '/v1/import', { token: exportOnlyB, body: bundleOf([]) });
      expect(e.status).toBe(403);
    });

    it('export needs portability:export', async () => {
      expect((await t.http('GET', '/v1/export', { token: noScopeB })).status).toBe(403);
      expect((await t.http('GET', '/v1/export', { token: exportOnlyB })).status).toBe(200);
    });

    it('leaks nested deep and in arrays are refused; references pass', async () => {
      const leaks = [
        { id: 'x', members: [], config: { nested: { deeper: [{ password: 'hunter2hunter2' }] } } },
        { id: 'x', members: [{ headers: { Authorization: 'Bearer abcdefghijklmnop' } }] },
        { id: 'x', members: ['-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----'] },
        { id: 'x', members: [], client_secret: 'shhhhhhh' },
      ];
      for (const payload of leaks) {
        const res = await t.http('POST', '/v1/import?dryRun=true', { token: keyC, body: bundleOf([rosterItem('leak', payload)]) });
        expect([res.status, res.body.error]).toEqual([422, 'bundle_credential_material']);
        expect(res.body.details.findings[0].ref).toBe('leak');
        expect(res.text).not.toMatch(/hunter2hunter2|abcdefghijklmnop|BEGIN PRIVATE|shhhhhhh/);
      }
      const refs = { id: 'refs', members: [], credentialRef: 'cred:abc', token: '[REDACTED:tok-1]' };
      expect((await t.http('POST', '/v1/import?dryRun=true', { token: keyC, body: bundleOf([rosterItem('refs', refs)]) })).status).toBe(200);
    });
  });

  it('the host refuses to export a leak it holds', async () => {
    await registry.install('test-roster', roster('leaky', { password: 'hunter2hunter2' }), { tenant: 'tenant-leak', principal: 'x' }, 'api');
    const key = await t.key({ tenant: 'tenant-leak', scopes: ['portability:export'] });
    const res = await t.http('GET', '/v1/export', { token: key });
    expect([res.status, res.body.error]).toEqual([422, 'export_credential_material']);
    expect(res.body.details.findings).toEqual([{ ref: 'test-roster:leaky', kind: 'roster', path: '/payload/password', reason: expect.any(String) }]);
    expect(res.text).not.toContain('hunter2hunter2');
    expect(t.logs.join('\n')).not.toContain('hunter2hunter2');
  });

  describe('malformed input', () => {
    it.each([
      ['dryRun=maybe', 'POST', '/v1/import?dryRun=maybe'],
      ['unknown query parameter', 'POST', '/v1/import?force=true'],
      ['bad kinds entry', 'GET', '/v1/export?kinds=Pack!'],
      ['unknown export parameter', 'GET', '/v1/export?all=1'],
    ])('%s → 400 validation_error', async (_, method, url) => {
      const res = await t.http(method, url, { token: keyC, body: method === 'POST' ? bundleOf([]) : undefined });
      expect([res.status, res.body.error]).toEqual([400, 'validation_error']);
    });

    it('a body that is not JSON → 400', async () => {
      const res = await t.http('POST', '/v1/import', { token: keyC, rawBody: '{"bundleVersion":', headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(Object.keys(res.body).sort()).toEqual(expect.arrayContaining(['error', 'message']));
    });

    it.each([
      ['an array body', [bundleOf([])], 'bundle_invalid'],
      ['bundleVersion "2"', { ...bundleOf([]), bundleVersion: '2' }, 'bundle_version_unsupported'],
      ['no items', { bundleVersion: '1', source: { origin: 'x' } }, 'bundle_invalid'],
      ['an unknown kind', bundleOf([{ kind: 'mystery', ref: 'm', payload: {} }]), 'bundle_invalid'],
      ['a duplicate ref', bundleOf([rosterItem('d', roster('d1')), rosterItem('d', roster('d2'))]), 'bundle_invalid'],
      ['an unknown dependsOn ref', bundleOf([rosterItem('a', roster('a'), ['ghost'])]), 'bundle_dependency_unknown'],
      ['extra keys next to bundle', { bundle: bundleOf([]), extra: 1 }, 'bundle_invalid'],
    ])('%s → 422 %s', async (_, body, code) => {
      const res = await t.http('POST', '/v1/import?dryRun=true', { token: keyC, body });
      expect([res.status, res.body.error]).toEqual([422, code]);
    });

    it('export ignores unknown kinds and filters known ones', async () => {
      const none = await t.http('GET', '/v1/export?kinds=pack,agent', { token: keyA });
      expect(none.body.items).toEqual([]);
      const some = await t.http('GET', '/v1/export?kinds=roster&kinds=schedule', { token: keyA });
      expect(some.body.items).toHaveLength(2);
    });
  });

  it('no planted secret reached the logs during this suite', () => {
    expect(t.logs.length).toBeGreaterThan(0);
    expect(t.logs.join('\n')).not.toMatch(/sk-conformance-canary|hunter2hunter2|abcdefghijklmnop|shhhhhhh|BEGIN PRIVATE KEY/);
  });
});

describe('portability: size limits', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_MAX_BODY_BYTES: '2048' }, configFile: { portability: { maxItems: 3 } } });
    key = await t.key({ scopes: ['portability:import', 'packs:publish'] });
  });
  afterAll(async () => t?.close());

  it('a body over the request limit gets 413 payload_too_large', async () => {
    const items = Array.from({ length: 40 }, (_, i) => ({ kind: 'roster', ref: `r${i}`, payload: { id: `r${i}`, members: ['a', 'b', 'c'] } }));
    const res = await t.http('POST', '/v1/import?dryRun=true', { token: key, body: bundleOf(items) });
    expect([res.status, res.body.error]).toEqual([413, 'payload_too_large']);
  });

  it('a bundle over portability.maxItems gets 413 payload_too_large', async () => {
    const items = Array.from({ length: 4 }, (_, i) => ({ kind: 'roster', ref: `r${i}`, payload: {} }));
    const res = await t.http('POST', '/v1/import?dryRun=true', { token: key, body: bundleOf(items) });
    expect([res.status, res.body.error]).toEqual([413, 'payload_too_large']);
    expect(res.body.details).toEqual({ maxItems: 3, items: 4 });
  });
});
