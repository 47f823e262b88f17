/**
 * Workspaces inside one tenant: a workspace-bound credential sees and acts on its own workspace
 * only. Keys of other workspaces and tenant-level keys are invisible to it (404 like unknown ids);
 * tenant-wide connections are readable by every workspace but change only through a tenant-level
 * credential; an Idempotency-Key belongs to the workspace that used it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { installChains, noopChain, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';

/** The fixture GitHub connection pack (it claims provider `github`). */
const MANIFEST = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../fixtures/connection-packs/connection-pack-github.json'), 'utf8')) as { name: string; provider: { id: string } };

describe('workspace boundaries inside a tenant', () => {
  let t: TestApp;
  let tenantAdmin: string;
  let w1Admin: string;
  let w2Admin: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_CREDENTIAL_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}` } });
    tenantAdmin = await t.key({ tenant: 'acme', principal: 'root', roles: ['admin'] });
    w1Admin = await t.key({ tenant: 'acme', workspace: 'w1', principal: 'w1-admin', roles: ['admin'] });
    w2Admin = await t.key({ tenant: 'acme', workspace: 'w2', principal: 'w2-admin', roles: ['admin'] });
  });
  afterAll(() => t?.close());

  const keysOf = async (token: string) => ((await t.http('GET', '/v1/keys?limit=500', { token })).body.keys as Array<{ id: string; principal: string; workspace?: string }>);

  describe('keys', () => {
    it('a workspace-bound admin lists only the keys of its workspace', async () => {
      const w1 = await keysOf(w1Admin);
      expect(w1.map((k) => k.principal)).toEqual(['w1-admin']);
      expect(w1.every((k) => k.workspace === 'w1')).toBe(true);
      // A tenant-level admin lists them all.
      expect((await keysOf(tenantAdmin)).map((k) => k.principal).sort()).toEqual(['root', 'w1-admin', 'w2-admin']);
    });

    it('a workspace-bound admin cannot revoke a key of another workspace nor a tenant-level key: 404 like an unknown id', async () => {
      const all = await keysOf(tenantAdmin);
      for (const victim of all.filter((k) => k.workspace !== 'w1')) {
        const res = await t.http('DELETE', `/v1/keys/${victim.id}`, { token: w1Admin });
        expect([victim.principal, res.status, res.body.error]).toEqual([victim.principal, 404, 'not_found']);
      }
      const unknown = await t.http('DELETE', '/v1/keys/00000000-0000-4000-8000-000000000000', { token: w1Admin });
      expect([unknown.status, unknown.body]).toEqual([404, (await t.http('DELETE', `/v1/keys/${all.find((k) => k.principal === 'root')!.id}`, { token: w1Admin })).body]);
      // Nothing was revoked: every key still works.
      for (const token of [tenantAdmin, w2Admin]) expect((await t.http('GET', '/v1/whoami', { token })).status).toBe(200);
      expect((await t.ds.query(`SELECT count(*)::int AS n FROM "api_key" WHERE "revoked_at" IS NOT NULL`))[0].n).toBe(0);
    });

    it('a workspace-bound admin revokes keys of its own workspace', async () => {
      const minted = await t.http('POST', '/v1/keys', { token: w1Admin, body: { principal: 'w1-bot', scopes: ['runs:read'] } });
      expect([minted.status, minted.body.apiKey.workspace]).toEqual([201, 'w1']);
      expect((await t.http('DELETE', `/v1/keys/${minted.body.apiKey.id}`, { token: w1Admin })).status).toBe(200);
      expect((await t.http('GET', '/v1/whoami', { token: minted.body.key })).status).toBe(401);
    });
  });

  describe('connections (tenant-wide)', () => {
    let connectionId: string;

    beforeAll(async () => {
      expect((await t.http('POST', '/v1/connection-packs', { token: tenantAdmin, body: MANIFEST })).status).toBe(201);
      const c = await t.http('POST', '/v1/connections', { token: tenantAdmin, body: { provider: MANIFEST.provider.id, name: 'shared-github', credential: 'ghp_original_secret_value' } });
      expect(c.status).toBe(201);
      connectionId = c.body.id;
    });

    it('every workspace reads the tenant\'s connections (never their credentials)', async () => {
      for (const token of [w1Admin, w2Admin]) {
        const res = await t.http('GET', `/v1/connections/${connectionId}`, { token });
        expect(res.status).toBe(200);
        expect(res.text).not.toContain('ghp_original_secret_value');
      }
    });

    it('a workspace-bound key cannot overwrite, delete or create one (403), and nothing changes', async () => {
      const before = await t.ds.query(`SELECT * FROM "credential" WHERE "tenant" = 'acme' ORDER BY "id"`);
      const attempts = [
        await t.http('PUT', `/v1/connections/${connectionId}/credential`, { token: w2Admin, body: { credential: 'ghp_attacker_value' } }),
        await t.http('DELETE', `/v1/connections/${connectionId}`, { token: w2Admin }),
        await t.http('POST', '/v1/connections', { token: w2Admin, body: { provider: MANIFEST.provider.id, name: 'w2-github', credential: 'ghp_x' } }),
        await t.http('DELETE', `/v1/connection-packs/${MANIFEST.name}`, { token: w2Admin }),
      ];
      for (const res of attempts) expect([res.status, res.body.error, res.body.details?.tenantLevel]).toEqual([403, 'forbidden', true]);
      expect(await t.ds.query(`SELECT * FROM "credential" WHERE "tenant" = 'acme' ORDER BY "id"`)).toEqual(before);
      expect((await t.http('GET', '/v1/connections', { token: tenantAdmin })).body.connections.map((c: { name: string }) => c.name)).toEqual(['shared-github']);
    });

    it('a tenant-level key still rotates it', async () => {
      expect((await t.http('PUT', `/v1/connections/${connectionId}/credential`, { token: tenantAdmin, body: { credential: 'ghp_rotated_value' } })).status).toBe(200);
    });
  });

  describe('idempotency keys', () => {
    let w1: string;
    let w2: string;

    beforeAll(async () => {
      await installChains(t, 'acme', 'vendor.test.ws', { 'vendor.test.ws-chain': noopChain(1) });
      w1 = await t.key({ tenant: 'acme', workspace: 'w1', principal: 'w1-runner', scopes: ['runs:create', 'runs:read'] });
      w2 = await t.key({ tenant: 'acme', workspace: 'w2', principal: 'w2-runner', scopes: ['runs:create', 'runs:read'] });
    });

    it('a key used in w1 is another key in w2: no 409, no disclosure, and each replays its own run', async () => {
      const headers = { 'idempotency-key': 'nightly-2026-03-01' };
      const a = await t.http('POST', '/v1/runs', { token: w1, headers, body: { workflowId: 'vendor.test.ws-chain', inputs: { who: 'w1' } } });
      expect(a.status).toBe(201);
      // Another body in another workspace: its own run, not idempotency_key_mismatch.
      const b = await t.http('POST', '/v1/runs', { token: w2, headers, body: { workflowId: 'vendor.test.ws-chain', inputs: { who: 'w2' } } });
      expect(b.status).toBe(201);
      expect(b.body.runId).not.toBe(a.body.runId);
      expect(b.body.owner.workspace).toBe('w2');
      // Each workspace replays its own run for its own key and body.
      const a2 = await t.http('POST', '/v1/runs', { token: w1, headers, body: { workflowId: 'vendor.test.ws-chain', inputs: { who: 'w1' } } });
      const b2 = await t.http('POST', '/v1/runs', { token: w2, headers, body: { workflowId: 'vendor.test.ws-chain', inputs: { who: 'w2' } } });
      expect([a2.body.runId, b2.body.runId]).toEqual([a.body.runId, b.body.runId]);
      // Within one workspace a different body is still a mismatch.
      const clash = await t.http('POST', '/v1/runs', { token: w1, headers, body: { workflowId: 'vendor.test.ws-chain', inputs: { who: 'other' } } });
      expect([clash.status, clash.body.error]).toEqual([409, 'idempotency_key_mismatch']);
      // The same key with the same body as w1's, sent from w2, is w2's run, never w1's.
      const cross = await t.http('POST', '/v1/runs', { token: w2, headers, body: { workflowId: 'vendor.test.ws-chain', inputs: { who: 'w1' } } });
      expect([cross.status, cross.body.error]).toEqual([409, 'idempotency_key_mismatch']);
      await waitForStatus(t, w1, a.body.runId, ['completed']);
      await waitForStatus(t, w2, b.body.runId, ['completed']);
      expect((await t.http('GET', `/v1/runs/${a.body.runId}`, { token: w2 })).status).toBe(404);
    });
  });
});
