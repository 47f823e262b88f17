/**
 * An unknown API key is refused without a database read each time: the refusal of a lookup id no key
 * has is kept as briefly as a verified key is (ApiKeyService.refused), for a bounded number of lookup
 * ids, and a key minted on any replica is announced with its lookup id, so a refusal cached before
 * the key existed does not outlive its mint (on a PostgreSQL server at once, by notification; on the
 * embedded engine within the recheck interval).
 */
import * as crypto from 'node:crypto';
import { ApiKeyEntity } from '../../src/platform/identity/api-key.entity';
import { ApiKeyService, KEY_REVOKED_CHANNEL } from '../../src/platform/identity/api-key.service';
import { KeyRevocationWatcher } from '../../src/platform/identity/key-revocation.watcher';
import { createTestApp, TestApp } from '../support/test-app';

const embedded = process.env.OPENWOP_TEST_DB_MODE === 'embedded';
const LOOKUP_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789';

describe('refusals of unknown API keys', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    a = await createTestApp();
    b = await createTestApp({ database: a.databaseName });
    const want = embedded ? 'recheck' : 'notify';
    for (const t of [a, b]) {
      const watcher = t.app.get(KeyRevocationWatcher);
      for (let i = 0; i < 100 && watcher.mode !== want; i++) await new Promise((r) => setTimeout(r, 50));
      expect(watcher.mode).toBe(want);
    }
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const prefix = () => a.config.apiKeyPrefix;
  /** A well-formed key of `lookup` (12 lookup characters) with a random secret. */
  const tokenOf = (lookup: string) => `${prefix()}${lookup}_${crypto.randomBytes(32).toString('base64url')}`;
  const randomLookup = () => Array.from(crypto.randomBytes(12), (x) => LOOKUP_CHARS[x % 36]).join('');

  it('reads the database once for an unknown key presented again and again', async () => {
    const reads = jest.spyOn(a.ds.getRepository(ApiKeyEntity), 'findOne');
    try {
      const token = tokenOf(randomLookup());
      for (let i = 0; i < 5; i++) expect((await a.http('GET', '/v1/whoami', { token })).status).toBe(401);
      expect(reads).toHaveBeenCalledTimes(1);
      // Another unknown key is a read of its own.
      expect((await a.http('GET', '/v1/whoami', { token: tokenOf(randomLookup()) })).status).toBe(401);
      expect(reads).toHaveBeenCalledTimes(2);
    } finally {
      reads.mockRestore();
    }
  });

  it('keeps at most REFUSED_MAX refusals, the oldest dropped first', async () => {
    const keys = a.app.get(ApiKeyService);
    const first = randomLookup();
    await keys.verify(tokenOf(first));
    for (let i = 0; i < ApiKeyService.REFUSED_MAX; i++) await keys.verify(tokenOf(randomLookup()));
    const refused = (keys as unknown as { refused: Map<string, number> }).refused;
    expect(refused.size).toBe(ApiKeyService.REFUSED_MAX);
    expect(refused.has(first)).toBe(false);
  }, 120_000);

  it('announces a minted key with its lookup id, so every replica drops a refusal it holds for it', async () => {
    if (embedded) return; // the embedded engine delivers no notification to another connection
    const { Client } = await import('pg');
    const listener = new Client({ connectionString: a.config.databaseUrl });
    await listener.connect();
    try {
      const heard: string[] = [];
      listener.on('notification', (n) => heard.push(String(n.payload)));
      await listener.query(`LISTEN ${KEY_REVOKED_CHANNEL}`);
      const { view } = await b.app.get(ApiKeyService).create({ tenant: 'acme', principal: 'minted', scopes: ['runs:read'] });
      const lookup = view.prefix.slice(prefix().length);
      for (let i = 0; i < 100 && !heard.includes(lookup); i++) await new Promise((r) => setTimeout(r, 20));
      expect(heard).toContain(lookup);
    } finally {
      await listener.end();
    }
  });

  it('accepts a key whose lookup id it refused before, once the key is announced (or within the recheck interval)', async () => {
    const lookup = randomLookup();
    const secret = crypto.randomBytes(32).toString('base64url');
    const token = `${prefix()}${lookup}_${secret}`;
    // Refused on replica a while no key has the lookup id (cached there as unknown).
    expect((await a.http('GET', '/v1/whoami', { token })).status).toBe(401);
    // The key appears (as a mint writes it) and is announced as a mint announces it.
    const repo = b.ds.getRepository(ApiKeyEntity);
    await repo.save(repo.create({ lookupId: lookup, secretHash: crypto.createHash('sha256').update(secret).digest('hex'), tenant: 'acme', workspace: null, principal: 'late', name: null, scopes: ['runs:read'], roles: [], expiresAt: null, revokedAt: null, rotatedAt: null, rotatedTo: null, rotatedFrom: null, rotationUsedAt: null }));
    await b.ds.query(`SELECT pg_notify($1, $2)`, [KEY_REVOKED_CHANNEL, lookup]);
    const since = Date.now();
    for (;;) {
      const res = await a.http('GET', '/v1/whoami', { token });
      if (res.status === 200) break;
      expect(res.status).toBe(401);
      if (Date.now() - since > 10_000) throw new Error('the key is still refused after 10 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    // Well inside the 5 s a refusal is otherwise kept.
    expect(Date.now() - since).toBeLessThan(embedded ? 2_500 : 1_000);
  });
});
