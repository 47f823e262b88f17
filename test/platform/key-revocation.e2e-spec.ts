/**
 * A revoked key stops working on every replica well inside the verification cache's 5 s: revoked by
 * another process (the CLI, through the same database: on the embedded engine, through its socket
 * while the host runs) and by another replica over HTTP. On a PostgreSQL server the revocation
 * arrives as a notification; the embedded engine's socket cannot deliver one to a listener, so there
 * a replica re-reads a cached key once it is older than OPENWOP_KEY_RECHECK_MS.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { ApiKeyService } from '../../src/platform/identity/api-key.service';
import { KeyRevocationWatcher } from '../../src/platform/identity/key-revocation.watcher';
import { createTestApp, TestApp } from '../support/test-app';

const BIN = path.join(__dirname, '..', '..', 'bin', 'openwop-host.js');
const embedded = process.env.OPENWOP_TEST_DB_MODE === 'embedded';

describe('key revocation across processes and replicas', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    a = await createTestApp();
    b = await createTestApp({ database: a.databaseName });
    // Each replica settles on how revocations reach it (the notification probe takes a moment).
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

  /** Milliseconds until `token` answers 401 on `t` (it was cached as valid there). */
  async function untilRefused(t: TestApp, token: string, since: number): Promise<number> {
    for (;;) {
      const res = await t.http('GET', '/v1/whoami', { token });
      if (res.status === 401) return Date.now() - since;
      expect(res.status).toBe(200);
      if (Date.now() - since > 10_000) throw new Error('the revoked key still works after 10 s');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('a key revoked by the CLI (another process) stops working on the running host within the recheck interval, far inside the cache\'s 5 s', async () => {
    const { key, view } = await a.app.get(ApiKeyService).create({ tenant: 'acme', principal: 'ci', scopes: ['runs:read'] });
    // Cached as valid on the host.
    expect((await a.http('GET', '/v1/whoami', { token: key })).status).toBe(200);
    const env = { ...process.env, DATABASE_URL: a.config.databaseUrl!, OPENWOP_DATA_DIR: a.config.dataDir, LOG_LEVEL: 'silent' };
    const { stdout } = await promisify(execFile)(process.execPath, [BIN, 'keys', 'revoke', view.id], { env, timeout: 90_000 });
    const revokedAt = Date.now();
    expect(stdout).toContain(`revoked ${view.id}`);
    const ms = await untilRefused(a, key, revokedAt);
    expect(ms).toBeLessThan(embedded ? 2_500 : 1_000);
    expect((await a.http('GET', '/v1/whoami', { token: key })).body.message).toMatch(/revoked/);
  }, 120_000);

  it('a key revoked on one replica stops working on the other as soon as the revocation commits (notification) or within the recheck interval', async () => {
    const { key, view } = await a.app.get(ApiKeyService).create({ tenant: 'acme', principal: 'bot', scopes: ['runs:read'] });
    const admin = await a.key({ tenant: 'acme', principal: 'root', roles: ['admin'] });
    expect((await b.http('GET', '/v1/whoami', { token: key })).status).toBe(200);
    expect((await a.http('DELETE', `/v1/keys/${view.id}`, { token: admin })).status).toBe(200);
    const ms = await untilRefused(b, key, Date.now());
    expect(ms).toBeLessThan(embedded ? 2_500 : 1_000);
  });

  it('listens on the process\'s one LISTEN connection, shared with every other listener (none of its own)', async () => {
    if (embedded) return;
    // Two replicas on this database: two listening connections in all, each its process's shared one.
    const rows = (await a.ds.query(`SELECT "application_name" FROM pg_stat_activity WHERE "datname" = current_database() AND "application_name" LIKE 'openwop-%' ORDER BY 1`)) as Array<{ application_name: string }>;
    expect(rows.map((r) => r.application_name)).toEqual(['openwop-notifications', 'openwop-notifications']);
  });

  it('trusts a cached key for the full cache expiry only while notifications arrive', () => {
    for (const t of [a, b]) {
      const keys = t.app.get(ApiKeyService);
      expect(keys.cacheMs).toBe(embedded ? t.config.keyRecheckMs : ApiKeyService.CACHE_MS);
    }
    expect(a.config.keyRecheckMs).toBeLessThan(ApiKeyService.CACHE_MS);
  });

  it('refuses an invalid OPENWOP_KEY_RECHECK_MS at start', async () => {
    await expect(createTestApp({ env: { OPENWOP_KEY_RECHECK_MS: '10' } })).rejects.toThrow(/OPENWOP_KEY_RECHECK_MS/);
    await expect(createTestApp({ env: { OPENWOP_KEY_RECHECK_MS: '60000' } })).rejects.toThrow(/OPENWOP_KEY_RECHECK_MS/);
  });
});
