/**
 * API-key rotation (openwop-auth-api-key-rotation): POST /v1/keys/{id}/rotate mints a successor bound
 * to the same tenant, workspace and principal; both keys authenticate during the overlap and the old
 * one is refused after it (401, as an expired key); the rotation is audited; the overlap is bounded;
 * another tenant's or workspace's key answers 404; a caller needs keys:manage and every scope the key
 * grants; the CLI rotates too; discovery claims the profile.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { ApiKeyService } from '../../src/platform/identity/api-key.service';
import { createTestApp, TestApp } from '../support/test-app';

const BIN = path.join(__dirname, '..', '..', 'bin', 'openwop-host.js');
const ROTATION_ENV = { OPENWOP_KEY_ROTATION_MIN_OVERLAP_S: '0', OPENWOP_KEY_ROTATION_OVERLAP_S: '3600', OPENWOP_KEY_ROTATION_MAX_OVERLAP_S: '7200' };

describe('API-key rotation', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    // Test seams on: the conformance fixtures (conformance-noop) the official scenario starts runs of.
    t = await createTestApp({ env: { ...ROTATION_ENV, OPENWOP_TEST_SEAMS: 'true' } });
    admin = await t.key({ tenant: 'acme', principal: 'root', roles: ['admin'] });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function mint(o: { tenant?: string; workspace?: string; principal?: string; scopes?: string[]; expiresAt?: Date } = {}) {
    return t.app.get(ApiKeyService).create({ tenant: o.tenant ?? 'acme', workspace: o.workspace, principal: o.principal ?? 'ci', scopes: o.scopes ?? ['runs:read'], expiresAt: o.expiresAt, name: 'deploy' });
  }

  async function audit(id: string): Promise<Array<{ action: string; entry: { details: Record<string, unknown>; actor: Record<string, unknown> } }>> {
    return t.ds.query(`SELECT "action", "entry" FROM "audit_entry" WHERE "entry"->'resource'->>'id' = $1 ORDER BY "seq"`, [id]);
  }

  async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
    const end = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > end) throw new Error('condition not met in time');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('mints a successor for the same principal; both keys work during the overlap; both halves are audited, and each key\'s first use after it', async () => {
    const old = await mint();
    expect((await t.http('GET', '/v1/whoami', { token: old.key })).status).toBe(200);
    const before = Date.now();
    const res = await t.http('POST', `/v1/keys/${old.view.id}/rotate`, { token: admin, body: { overlapSeconds: 3000 } });
    expect(res.status).toBe(201);
    const { key, apiKey, previous, overlapEndsAt } = res.body;
    expect(key).toMatch(/^owk_[a-z0-9]{12}_/);
    expect(key).not.toBe(old.key);
    expect(apiKey).toMatchObject({ tenant: 'acme', principal: 'ci', scopes: ['runs:read'], name: 'deploy', rotatedFrom: old.view.id });
    expect(apiKey.expiresAt).toBeUndefined();
    expect(previous).toMatchObject({ id: old.view.id, rotatedTo: apiKey.id });
    expect(overlapEndsAt).toBe(previous.expiresAt);
    const ends = Date.parse(overlapEndsAt);
    expect(ends).toBeGreaterThanOrEqual(before + 3000_000 - 2000);
    expect(ends).toBeLessThanOrEqual(Date.now() + 3000_000 + 2000);

    for (const token of [old.key, key, old.key, key]) {
      const who = await t.http('GET', '/v1/whoami', { token });
      expect(who.status).toBe(200);
      expect(who.body).toMatchObject({ tenant: 'acme', principal: 'ci', scopes: ['runs:read'] });
    }
    const oldAudit = await audit(old.view.id);
    expect(oldAudit.map((r) => r.action)).toEqual(['key.created', 'key.rotated', 'key.used']);
    expect(oldAudit[1].entry.details).toEqual({ keyPrincipal: 'ci', successorId: apiKey.id, overlapSeconds: 3000, overlapEndsAt });
    expect(oldAudit[1].entry.actor).toMatchObject({ principal: 'root', kind: 'api-key' });
    expect(oldAudit[2].entry.details).toMatchObject({ afterRotation: true, successorId: apiKey.id });
    const newAudit = await audit(apiKey.id);
    expect(newAudit.map((r) => r.action)).toEqual(['key.created', 'key.used']);
    expect(newAudit[0].entry.details).toMatchObject({ rotatedFrom: old.view.id, scopes: ['runs:read'] });
    // No secret in any entry (the part after the key's id: base64url, so it may hold `_` itself).
    expect(JSON.stringify([...oldAudit, ...newAudit])).not.toContain(/^owk_[a-z0-9]{12}_(.+)$/.exec(key)![1]);

    // A key is rotated once: its successor is the one to rotate next.
    const again = await t.http('POST', `/v1/keys/${old.view.id}/rotate`, { token: admin, body: {} });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: 'key_already_rotated', details: { successorId: apiKey.id } });
    const listed = await t.http('GET', '/v1/keys?limit=200', { token: admin });
    expect(listed.body.keys.find((k: { id: string }) => k.id === old.view.id)).toMatchObject({ rotatedTo: apiKey.id, expiresAt: overlapEndsAt });
  });

  it('refuses the old key once the overlap ends (401, as an expired key) while the successor keeps working; a revoked key is not rotated', async () => {
    const old = await mint();
    const res = await t.http('POST', `/v1/keys/${old.view.id}/rotate`, { token: admin, body: { overlapSeconds: 1 } });
    expect(res.status).toBe(201);
    await until(async () => (await t.http('GET', '/v1/whoami', { token: old.key })).status === 401);
    const refused = await t.http('GET', '/v1/whoami', { token: old.key });
    expect(refused.body).toMatchObject({ error: 'unauthenticated', message: 'The API key has expired.' });
    expect(JSON.stringify(refused.body)).not.toContain(old.key);
    expect((await t.http('GET', '/v1/whoami', { token: res.body.key })).status).toBe(200);

    // Overlap 0: the old key is refused at once.
    const other = await mint();
    const now = await t.http('POST', `/v1/keys/${other.view.id}/rotate`, { token: admin, body: { overlapSeconds: 0 } });
    expect(now.status).toBe(201);
    expect((await t.http('GET', '/v1/whoami', { token: other.key })).status).toBe(401);
    expect((await t.http('GET', '/v1/whoami', { token: now.body.key })).status).toBe(200);

    const revoked = await mint();
    await t.app.get(ApiKeyService).revoke(revoked.view.id);
    const r = await t.http('POST', `/v1/keys/${revoked.view.id}/rotate`, { token: admin });
    expect(r.status).toBe(409);
    expect(r.body.error).toBe('key_revoked');
  });

  it('never extends an expiry the old key already had, gives the successor the old expiry by default, and bounds the overlap', async () => {
    const soon = new Date(Date.now() + 600_000);
    const old = await mint({ expiresAt: soon });
    const res = await t.http('POST', `/v1/keys/${old.view.id}/rotate`, { token: admin, body: { overlapSeconds: 7200 } });
    expect(res.status).toBe(201);
    expect(res.body.overlapEndsAt).toBe(soon.toISOString());
    expect(res.body.apiKey.expiresAt).toBe(soon.toISOString());

    const later = new Date(Date.now() + 86_400_000).toISOString();
    const k = await mint();
    const chosen = await t.http('POST', `/v1/keys/${k.view.id}/rotate`, { token: admin, body: { expiresAt: later } });
    expect(chosen.status).toBe(201);
    expect(chosen.body.apiKey.expiresAt).toBe(later);
    // The configured default overlap (OPENWOP_KEY_ROTATION_OVERLAP_S=3600).
    expect(Math.abs(Date.parse(chosen.body.overlapEndsAt) - Date.now() - 3600_000)).toBeLessThan(5000);

    const bounded = await mint();
    for (const body of [{ overlapSeconds: 7201 }, { overlapSeconds: -1 }, { overlapSeconds: 1.5 }, { overlapSeconds: '60' }, { overlap: 60 }]) {
      const r = await t.http('POST', `/v1/keys/${bounded.view.id}/rotate`, { token: admin, body });
      expect([r.status, r.body.error]).toEqual([400, 'validation_error']);
    }
    // Nothing was rotated by the refused requests.
    expect((await t.http('POST', `/v1/keys/${bounded.view.id}/rotate`, { token: admin, body: { overlapSeconds: 7200 } })).status).toBe(201);
  });

  it('answers 404 for another tenant\'s key, an unknown id and a malformed id, exactly alike, and leaves them untouched', async () => {
    const foreign = await mint({ tenant: 'globex' });
    for (const id of [foreign.view.id, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const r = await t.http('POST', `/v1/keys/${id}/rotate`, { token: admin, body: { overlapSeconds: 0 } });
      expect([r.status, r.body.error]).toEqual([404, 'not_found']);
    }
    expect((await t.http('GET', '/v1/whoami', { token: foreign.key })).status).toBe(200);
    expect((await audit(foreign.view.id)).map((r) => r.action)).toEqual(['key.created']);
  });

  it('fails closed on scopes: keys:manage is required, and the caller must hold every scope the key grants', async () => {
    const target = await mint({ scopes: ['runs:read', 'runs:create'] });
    const noManage = await t.key({ tenant: 'acme', principal: 'viewer', scopes: ['runs:read', 'runs:create'] });
    const r1 = await t.http('POST', `/v1/keys/${target.view.id}/rotate`, { token: noManage, body: {} });
    expect([r1.status, r1.body.error]).toEqual([403, 'forbidden']);
    const narrow = await t.key({ tenant: 'acme', principal: 'ops', scopes: ['keys:manage', 'runs:read'] });
    const r2 = await t.http('POST', `/v1/keys/${target.view.id}/rotate`, { token: narrow, body: {} });
    expect([r2.status, r2.body.error]).toEqual([403, 'forbidden']);
    expect(r2.body.details.requiredScopes).toEqual(['runs:create']);
    expect((await t.http('POST', `/v1/keys/${target.view.id}/rotate`, { token: '' })).status).toBe(401);
    // Refused attempts changed nothing: the key is still rotatable and audited only at its creation.
    expect((await audit(target.view.id)).map((r) => r.action)).toEqual(['key.created']);
    const ok = await t.key({ tenant: 'acme', principal: 'ops2', scopes: ['keys:manage', 'runs:read', 'runs:create'] });
    expect((await t.http('POST', `/v1/keys/${target.view.id}/rotate`, { token: ok, body: {} })).status).toBe(201);
  });

  it('a workspace-bound caller rotates only its workspace\'s keys, and the successor stays bound to that workspace', async () => {
    const wsAdmin = await t.key({ tenant: 'acme', workspace: 'w1', principal: 'w1-admin', scopes: ['keys:manage', 'runs:read'] });
    const mine = await mint({ workspace: 'w1', principal: 'w1-bot' });
    const theirs = await mint({ workspace: 'w2', principal: 'w2-bot' });
    const tenantLevel = await mint({ principal: 'tenant-bot' });
    for (const k of [theirs, tenantLevel]) {
      const r = await t.http('POST', `/v1/keys/${k.view.id}/rotate`, { token: wsAdmin, body: {} });
      expect([r.status, r.body.error]).toEqual([404, 'not_found']);
    }
    const r = await t.http('POST', `/v1/keys/${mine.view.id}/rotate`, { token: wsAdmin, body: {} });
    expect(r.status).toBe(201);
    expect(r.body.apiKey).toMatchObject({ workspace: 'w1', principal: 'w1-bot' });
    expect((await t.http('GET', '/v1/whoami', { token: r.body.key })).body).toMatchObject({ tenant: 'acme', workspace: 'w1', principal: 'w1-bot' });
  });

  it('the official scenario\'s overlap leg: the old key and its successor each create a conformance-noop run owned by the same tenant and principal; a canary bearer is 401 and never echoed', async () => {
    const old = await mint({ principal: 'runner', scopes: ['runs:create', 'runs:read'] });
    const rotated = await t.http('POST', `/v1/keys/${old.view.id}/rotate`, { token: admin, body: { overlapSeconds: 600 } });
    expect(rotated.status).toBe(201);
    const ids: string[] = [];
    for (const token of [old.key, rotated.body.key]) {
      const r = await t.http('POST', '/v1/runs', { token, body: { workflowId: 'conformance-noop' } });
      expect(r.status).toBe(201);
      ids.push(r.body.runId);
      const snap = await t.http('GET', `/v1/runs/${r.body.runId}`, { token });
      expect(snap.body.owner).toMatchObject({ tenant: 'acme', principal: 'runner' });
    }
    expect(ids[0]).not.toBe(ids[1]);
    const canary = 'owk_canary0d1d2d_NOT_A_REAL_KEY_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
    const refused = await t.http('POST', '/v1/runs', { token: canary, body: { workflowId: 'conformance-noop' } });
    expect(refused.status).toBe(401);
    expect(refused.text).not.toContain(canary);
  });

  it('claims the profile in discovery with the configured minimum grace, next to the audit-log-integrity profile', async () => {
    const res = await t.http('GET', '/.well-known/openwop');
    expect(res.body.auth.profiles).toEqual(expect.arrayContaining(['openwop-auth-api-key-rotation', 'openwop-audit-log-integrity']));
    expect(res.body.auth.rotation).toEqual({ supported: true, minGraceSeconds: 0 });
    expect(res.body.capabilities.auth.rotation).toEqual({ supported: true, minGraceSeconds: 0 });
  });

  it('the CLI rotates a key by id (keys rotate ID --overlap), bounded like the API', async () => {
    const old = await mint({ principal: 'cli-bot' });
    const env = { ...process.env, ...ROTATION_ENV, DATABASE_URL: t.config.databaseUrl!, OPENWOP_DATA_DIR: t.config.dataDir, LOG_LEVEL: 'silent' };
    const run = promisify(execFile);
    await expect(run(process.execPath, [BIN, 'keys', 'rotate', old.view.id, '--overlap', '3h'], { env, timeout: 90_000 })).rejects.toMatchObject({ stderr: expect.stringMatching(/overlapSeconds must be a whole number from 0 to 7200/) });
    await expect(run(process.execPath, [BIN, 'keys', 'rotate', old.view.id, '--overlap', 'soon'], { env, timeout: 90_000 })).rejects.toMatchObject({ stderr: expect.stringMatching(/expected seconds or a duration/) });
    const { stdout } = await run(process.execPath, [BIN, 'keys', 'rotate', old.view.id, '--overlap', '0', '--json'], { env, timeout: 90_000 });
    const out = JSON.parse(stdout) as { key: string; id: string; previousId: string; overlapEndsAt: string };
    expect(out.previousId).toBe(old.view.id);
    await until(async () => (await t.http('GET', '/v1/whoami', { token: old.key })).status === 401);
    expect((await t.http('GET', '/v1/whoami', { token: out.key })).body).toMatchObject({ tenant: 'acme', principal: 'cli-bot' });
    expect((await audit(old.view.id)).map((r) => r.action)).toEqual(['key.created', 'key.rotated']);
    expect((await audit(old.view.id))[1].entry.actor).toMatchObject({ principal: 'system', kind: 'system' });

    const human = await mint({ principal: 'cli-human' });
    const printed = await run(process.execPath, [BIN, 'keys', 'rotate', human.view.id, '--overlap', '90m'], { env, timeout: 90_000 });
    expect(printed.stdout).toMatch(/^owk_[a-z0-9]{12}_\S+\n\nid [0-9a-f-]{36} · replaces /);
    expect(printed.stdout).toMatch(/works until \S+, then is refused/);
    const listed = (await run(process.execPath, [BIN, 'keys', 'list', '--tenant', 'acme'], { env, timeout: 90_000 })).stdout.split('\n');
    expect(listed.find((l) => l.startsWith(human.view.id))).toMatch(/ rotated /);
    expect(listed.find((l) => l.startsWith(old.view.id))).toMatch(/ expired /);
    expect(listed.find((l) => l.startsWith(out.id))).toMatch(/ active /);
  }, 240_000);
});
