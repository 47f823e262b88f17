/**
 * The credential store's operating modes and the `connection-ref` portable kind: no key with
 * DATABASE_URL refuses to store credentials (503) and stops advertising `credentials`; a key
 * rotation re-seals old credentials in the background; a connection exports as a reference and
 * imports into another tenant without its credential, idempotently.
 */
import { randomBytes } from 'node:crypto';
import { PeriodicTaskService } from '../../src/platform/scheduler/periodic-task.service';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { CredentialStoreService } from '../../src/capabilities/connections/credentials/credential-store.service';
import { createTestApp, TestApp } from '../support/test-app';

const k1 = randomBytes(32).toString('base64');
const k2 = randomBytes(32).toString('base64');
const SECRET = `xoxb-${randomBytes(10).toString('hex')}-planted`;

describe('credential store without a key (DATABASE_URL, no OPENWOP_CREDENTIAL_KEYS)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t?.close());

  it('serves packs, refuses to store credentials with 503 and does not advertise credentials', async () => {
    const key = await t.key({ tenant: 'nokey', scopes: ['connections:read', 'connections:manage'] });
    const r = await t.http('POST', '/v1/connections', { token: key, body: { provider: 'github', name: 'gh', credential: SECRET } });
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ error: 'credential_store_unavailable', message: expect.stringContaining('OPENWOP_CREDENTIAL_KEYS'), details: expect.any(Object) });
    expect(r.text).not.toContain(SECRET);
    expect((await t.http('GET', '/v1/connections', { token: key })).body.connections).toEqual([]);
    const doc = await t.http('GET', '/.well-known/openwop');
    expect(doc.body.connections).toEqual({ supported: true, packsSupported: true });
    expect(doc.body.credentials).toBeUndefined();
    expect(t.logs.some((l) => l.includes('No OPENWOP_CREDENTIAL_KEYS'))).toBe(true);
  });
});

describe('credential key rotation', () => {
  it('opens old credentials after a rotation and re-seals them under the new key', async () => {
    const first = await createTestApp({ env: { OPENWOP_CREDENTIAL_KEYS: `old:${k1}` } });
    let second: TestApp | undefined;
    try {
      const key = await first.key({ tenant: 'rot', scopes: ['connections:read', 'connections:manage'] });
      const created = await first.http('POST', '/v1/connections', { token: key, body: { provider: 'slack', name: 'slack-bot', credential: SECRET } });
      expect(created.status).toBe(201);
      const credentialId = String(created.body.credentialRef).slice('cred:'.length);
      // A second replica on the same database, configured with the new key first and the old one still listed.
      second = await createTestApp({ database: first.databaseName, env: { OPENWOP_CREDENTIAL_KEYS: `new:${k2},old:${k1}` } });
      const store = second.moduleRef.get(CredentialStoreService);
      await expect(store.open('rot', credentialId)).resolves.toBe(SECRET);
      const tasks = second.moduleRef.get(PeriodicTaskService);
      await tasks.trigger('connections.credential-reseal');
      await tasks.tick();
      await waitFor(async () => ((await second!.ds.query(`SELECT "key_id" FROM "credential" WHERE "id" = $1`, [credentialId])) as Array<{ key_id: string }>)[0].key_id === 'new');
      await expect(store.open('rot', credentialId)).resolves.toBe(SECRET);
      expect(second.logs.filter((l) => l.includes(SECRET) || l.includes(k1) || l.includes(k2))).toEqual([]);
    } finally {
      await second?.close();
      await first.close();
    }
  });
});

/** Polls a database condition the background task makes true (no timed assertion: bounded retries). */
async function waitFor(cond: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('condition never became true');
}

describe('portability: connection-ref', () => {
  let t: TestApp;
  let keyA: string;
  let keyB: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_CREDENTIAL_KEYS: `k1:${k1}` } });
    keyA = await t.key({ tenant: 'port-a', principal: 'alice', scopes: ['connections:read', 'connections:manage', 'portability:export', 'portability:import'] });
    keyB = await t.key({ tenant: 'port-b', principal: 'bob', scopes: ['connections:read', 'connections:manage', 'portability:export', 'portability:import'] });
    expect((await t.http('POST', '/v1/connections', { token: keyA, body: { provider: 'slack', name: 'team-slack', credential: SECRET } })).status).toBe(201);
  });
  afterAll(async () => t?.close());

  it('advertises connection-ref and exports a reference with no credential', async () => {
    expect((await t.http('GET', '/.well-known/openwop')).body.portability.kinds).toContain('connection-ref');
    const r = await t.http('GET', '/v1/export?kinds=connection-ref', { token: keyA });
    expect(r.status).toBe(200);
    expect(SchemaRegistry.shared().validate('export-bundle', r.body)).toEqual([]);
    const conn = (await t.http('GET', '/v1/connections', { token: keyA })).body.connections[0];
    expect(r.body.items).toEqual([
      { kind: 'connection-ref', ref: 'connection:team-slack', dependsOn: [], payload: { name: 'team-slack', provider: 'slack', kind: 'connection', scope: 'tenant', credentialRef: `[REDACTED:${conn.id}]` } },
    ]);
    expect(r.text).not.toContain(SECRET);
  });

  it('imports into another tenant without the credential, listing it for re-bind, idempotently', async () => {
    const bundle = (await t.http('GET', '/v1/export?kinds=connection-ref', { token: keyA })).body;
    const plan = await t.http('POST', '/v1/import?dryRun=true', { token: keyB, body: { bundle } });
    expect(plan.status).toBe(200);
    expect(plan.body.secretsToRebind).toEqual(['slack']);
    expect((await t.http('GET', '/v1/connections', { token: keyB })).body.connections).toEqual([]);

    const applied = await t.http('POST', '/v1/import', { token: keyB, body: { bundle } });
    expect(applied.status).toBe(200);
    expect(applied.body.secretsToRebind).toEqual(['slack']);
    const imported = (await t.http('GET', '/v1/connections', { token: keyB })).body.connections;
    expect(imported).toEqual([expect.objectContaining({ name: 'team-slack', provider: 'slack', credentialRef: null, credentialBound: false, origin: 'import', createdBy: 'bob' })]);

    const again = await t.http('POST', '/v1/import', { token: keyB, body: { bundle } });
    expect(again.status).toBe(200);
    expect(again.body.items.map((i: { result: string }) => i.result)).toEqual(['skipped']);
    expect((await t.http('GET', '/v1/connections', { token: keyB })).body.connections).toHaveLength(1);

    // An imported connection offers no connector tools until a credential is bound.
    const bound = await t.http('PUT', `/v1/connections/${imported[0].id}/credential`, { token: keyB, body: { credential: SECRET } });
    expect(bound.status).toBe(200);
    expect(bound.body).toMatchObject({ credentialBound: true, credentialRef: expect.stringMatching(/^cred:/) });
    const after = await t.http('POST', '/v1/import?dryRun=true', { token: keyB, body: { bundle } });
    expect(after.body.secretsToRebind).toEqual([]);
  });

  it('refuses a connection-ref carrying a credential value (422) and writes nothing', async () => {
    const leaky = {
      bundleVersion: '1',
      source: { origin: 'adapter:test' },
      items: [{ kind: 'connection-ref', ref: 'c1', payload: { name: 'leaky', provider: 'slack', apiKey: SECRET } }],
    };
    const r = await t.http('POST', '/v1/import', { token: keyB, body: { bundle: leaky } });
    expect(r.status).toBe(422);
    expect(r.text).not.toContain(SECRET);
    expect((await t.http('GET', '/v1/connections', { token: keyB })).body.connections.map((c: { name: string }) => c.name)).toEqual(['team-slack']);
  });

  it('never logged the credential', () => {
    expect(t.logs.filter((l) => l.includes(SECRET))).toEqual([]);
  });
});
