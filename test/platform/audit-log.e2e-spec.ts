/**
 * The tamper-evident audit log (openwop-audit-log-integrity): discovery claims it with the key a
 * verifier needs, security-relevant actions append hash-chained entries per tenant, checkpoints are
 * signed at the advertised cadence, GET /v1/audit/verify answers the closed AuditVerifyResult, a row
 * rewritten behind the append-only trigger's back is detected, concurrent appends from two replicas
 * never fork a chain, and no tenant sees another's entries.
 */
import { createPublicKey, randomBytes, verify as edVerify } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { AUDIT_SEAL_TASK } from '../../src/platform/audit/audit-checkpoint.sealer';
import { AuditLogService } from '../../src/platform/audit/audit-log.service';
import { PeriodicTaskService } from '../../src/platform/scheduler/periodic-task.service';
import { jcs, merkleRootOf, sha } from '../support/audit-tamper';
import { createTestApp, TestApp } from '../support/test-app';

const SCHEMA = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'schemas', 'openwop', 'audit-verify-result.schema.json'), 'utf8'));
const validateResult = new Ajv2020({ strict: false, allErrors: true }).compile(SCHEMA);

// A keyring, so webhooks (whose signing secrets it seals) are served.
const ENV = { OPENWOP_AUDIT_CHECKPOINT_INTERVAL: '3', OPENWOP_CREDENTIAL_KEYS: `k1:${randomBytes(32).toString('base64')}` };

describe('audit log integrity', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await createTestApp({ env: ENV });
    admin = await t.key({ tenant: 'audit-a', principal: 'boss', roles: ['admin'] });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function verify(token: string, q = 'fromSeq=0&toSeq=1000') {
    return t.http('GET', `/v1/audit/verify?${q}`, { token });
  }

  async function entries(tenant: string): Promise<Array<{ seq: number; action: string; entry: Record<string, unknown>; hash: string }>> {
    const rows = (await t.ds.query(`SELECT "seq", "action", "entry", "hash" FROM "audit_entry" WHERE "tenant" = $1 ORDER BY "seq"`, [tenant])) as Array<{ seq: string; action: string; entry: Record<string, unknown>; hash: string }>;
    return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
  }

  it('discovery claims the profile with an Ed25519 SPKI key and the checkpoint cadence', async () => {
    const res = await t.http('GET', '/.well-known/openwop');
    expect(res.status).toBe(200);
    expect(res.body.auth.profiles).toContain('openwop-audit-log-integrity');
    const a = res.body.auth.auditLogIntegrity;
    expect(a).toEqual({ hashChain: true, checkpointSignatureAlgorithm: 'ed25519', checkpointPublicKey: expect.any(String), checkpointIntervalEntries: 3, checkpointIntervalSeconds: 300 });
    const key = createPublicKey({ key: Buffer.from(a.checkpointPublicKey, 'base64'), format: 'der', type: 'spki' });
    expect(key.asymmetricKeyType).toBe('ed25519');
    // Generated once and kept: the same key after another read, and stored in host_secret.
    expect((await t.http('GET', '/.well-known/openwop')).body.auth.auditLogIntegrity.checkpointPublicKey).toBe(a.checkpointPublicKey);
    expect((await t.ds.query(`SELECT 1 FROM "host_secret" WHERE "name" = 'audit-checkpoint-ed25519'`)).length).toBe(1);
  });

  it('key mints and revocations append chained entries; verify answers the closed shape with signed checkpoints every 3 entries', async () => {
    const minted: Array<{ id: string; key: string }> = [];
    for (let i = 0; i < 3; i++) {
      const res = await t.http('POST', '/v1/keys', { token: admin, body: { principal: `bot-${i}`, scopes: ['runs:read'] } });
      expect(res.status).toBe(201);
      minted.push({ id: res.body.apiKey.id, key: res.body.key });
    }
    expect((await t.http('DELETE', `/v1/keys/${minted[0].id}`, { token: admin })).status).toBe(200);
    // Revoking again changes nothing, so records nothing.
    expect((await t.http('DELETE', `/v1/keys/${minted[0].id}`, { token: admin })).status).toBe(200);

    const rows = await entries('audit-a');
    // The admin key itself (minted by the test harness as `system`), three mints by `boss`, one revocation.
    expect(rows.map((r) => r.action)).toEqual(['key.created', 'key.created', 'key.created', 'key.created', 'key.revoked']);
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(rows[1].entry).toMatchObject({ seq: 2, tenant: 'audit-a', action: 'key.created', actor: { principal: 'boss', kind: 'api-key' }, resource: { type: 'api-key', id: minted[0].id }, details: { keyPrincipal: 'bot-0', scopes: ['runs:read'] } });
    expect(rows[0].entry.prevHash).toBeNull();
    for (let i = 1; i < rows.length; i++) expect(rows[i].entry.prevHash).toBe(sha(jcs(rows[i - 1].entry)));
    for (const r of rows) expect(r.hash).toBe(sha(jcs(r.entry)));
    // Secrets never enter the log: no key's secret, nor its hash, appears in any entry.
    const text = JSON.stringify(rows);
    for (const m of minted) {
      const secret = m.key.split('_').slice(2).join('_');
      expect(text).not.toContain(secret);
      expect(text).not.toContain(sha(secret));
    }

    const res = await verify(admin);
    expect(res.status).toBe(200);
    expect(validateResult(res.body)).toBe(true);
    expect(res.body).toMatchObject({ fromSeq: 0, toSeq: 1000, chainValid: true, checkpointsValid: true, anomalies: [] });
    // The first entry is anchored at once, then every third.
    expect(res.body.checkpoints.map((c: { atSequence: number }) => c.atSequence)).toEqual([1, 4]);
    const pub = createPublicKey({ key: Buffer.from((await t.http('GET', '/.well-known/openwop')).body.auth.auditLogIntegrity.checkpointPublicKey, 'base64'), format: 'der', type: 'spki' });
    let prev = 0;
    for (const cp of res.body.checkpoints as Array<{ atSequence: number; merkleRoot: string; signature: string }>) {
      const leaves = rows.filter((r) => r.seq > prev && r.seq <= cp.atSequence).map((r) => sha(jcs(r.entry)));
      expect(cp.merkleRoot).toBe(merkleRootOf(leaves));
      expect(edVerify(null, Buffer.from(cp.merkleRoot, 'hex'), pub, Buffer.from(cp.signature, 'base64'))).toBe(true);
      prev = cp.atSequence;
    }
    // A window: only the checkpoints inside it.
    const part = await verify(admin, 'fromSeq=2&toSeq=3');
    expect(part.body).toMatchObject({ fromSeq: 2, toSeq: 3, chainValid: true, checkpoints: [], anomalies: [] });
  });

  it('verify needs audit:read from a tenant-level credential and refuses malformed ranges', async () => {
    expect((await t.http('GET', '/v1/audit/verify')).status).toBe(401);
    const reader = await t.key({ tenant: 'audit-a', scopes: ['runs:read'] });
    expect((await verify(reader)).status).toBe(403);
    const wsAuditor = await t.key({ tenant: 'audit-a', workspace: 'ws1', scopes: ['audit:read'] });
    const ws = await verify(wsAuditor);
    expect(ws.status).toBe(403);
    expect(ws.body.error).toBe('forbidden');
    for (const q of ['fromSeq=5&toSeq=2', 'fromSeq=abc', 'toSeq=-1', 'fromSeq=1.5', 'fromSeq=0&toSeq=1&extra=1']) {
      const res = await verify(admin, q);
      expect([q, res.status, res.body.error]).toEqual([q, 400, 'validation_error']);
    }
    // No range: the whole chain.
    const all = await t.http('GET', '/v1/audit/verify', { token: admin });
    expect(all.status).toBe(200);
    expect(all.body.chainValid).toBe(true);
  });

  it('tenants never see each other: each tenant verifies only its own chain', async () => {
    const b = await t.key({ tenant: 'audit-b', principal: 'other', roles: ['admin'] });
    await t.http('POST', '/v1/keys', { token: b, body: { principal: 'b-bot', scopes: ['runs:read'] } });
    const rowsB = await entries('audit-b');
    expect(rowsB.map((r) => r.seq)).toEqual([1, 2]);
    expect(JSON.stringify(rowsB)).not.toContain('audit-a');
    const res = await verify(b);
    expect(res.body.chainValid).toBe(true);
    const cpsA = (await verify(admin)).body.checkpoints.map((c: { checkpoint: string }) => c.checkpoint);
    for (const cp of res.body.checkpoints) expect(cpsA).not.toContain(cp.checkpoint);
    // Tenant B's checkpoint roots cover B's entries only.
    expect(res.body.checkpoints[0]).toMatchObject({ atSequence: 1, merkleRoot: merkleRootOf([sha(jcs(rowsB[0].entry))]) });
  });

  it('webhook registration and removal are recorded, without the URL path, query or signing secret', async () => {
    const res = await t.http('POST', '/v1/webhooks', { token: admin, body: { url: 'https://example.com/hooks/receiver?token=hunter2', events: ['run.completed'] } });
    expect(res.status).toBe(201);
    expect((await t.http('DELETE', `/v1/webhooks/${res.body.webhookId}`, { token: admin })).status).toBe(204);
    const rows = (await entries('audit-a')).filter((r) => r.action.startsWith('webhook.'));
    expect(rows.map((r) => r.action)).toEqual(['webhook.registered', 'webhook.unregistered']);
    expect(rows[0].entry.details).toMatchObject({ origin: 'https://example.com', events: ['run.completed'] });
    const text = JSON.stringify(rows);
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('/hooks/receiver');
    expect(text).not.toContain(res.body.secret);
  });

  it('proposal apply, approval decisions, imports and run cancels are recorded in their own transactions', async () => {
    // A replica of the same database whose proposals activate through an approval gate.
    const g = await createTestApp({ database: t.databaseName, env: { ...ENV, OPENWOP_PROPOSALS_ACTIVATION: 'approval-gate' } });
    try {
      const boss = await g.key({ tenant: 'audit-g', principal: 'boss', roles: ['admin'] });
      const pack = {
        name: 'private.audit.gated',
        version: '1.0.0',
        kind: 'workflow-chain',
        engines: { openwop: '^1.0.0' },
        chains: [{ chainId: 'private.audit.gated.run', version: '1.0.0', label: 'Gated', description: 'Released by a gate.', parameters: { type: 'object' }, dag: { nodes: [{ id: 'a', typeId: 'core.noop' }] } }],
      };
      const created = await g.http('POST', '/v1/proposals', { token: boss, body: { kind: 'workflow-chain-pack', artifact: pack, provenance: { sourceRunIds: ['run-1'] } } });
      expect(created.status).toBe(201);
      const pending = await g.http('POST', `/v1/proposals/${created.body.id}/apply`, { token: boss, body: {} });
      expect([pending.status, pending.body.status, pending.body.message]).toEqual([202, 'pending-approval', undefined]);
      expect((await g.http('POST', `/v1/approvals/${pending.body.pendingApprovalId}/grant`, { token: boss, body: { reason: 'my password is hunter2' } })).status).toBe(200);
      const bundle = await g.http('GET', '/v1/export', { token: boss });
      expect(bundle.status).toBe(200);
      const importer = await g.key({ tenant: 'audit-h', principal: 'imp', roles: ['admin'] });
      expect((await g.http('POST', '/v1/import', { token: importer, body: bundle.body })).status).toBe(200);

      const actions = async (tenant: string) =>
        ((await g.ds.query(`SELECT "action", "entry" FROM "audit_entry" WHERE "tenant" = $1 ORDER BY "seq"`, [tenant])) as Array<{ action: string; entry: Record<string, unknown> }>);
      const gRows = await actions('audit-g');
      expect(gRows.map((r) => r.action)).toEqual(['key.created', 'proposal.applied', 'approval.decided']);
      expect(gRows[1].entry).toMatchObject({ actor: { principal: 'boss' }, resource: { type: 'proposal' }, details: { kind: 'workflow-chain-pack', approvalId: pending.body.pendingApprovalId } });
      expect(gRows[2].entry).toMatchObject({ resource: { type: 'approval', id: pending.body.pendingApprovalId }, details: { decision: 'granted', outcome: 'granted', voter: 'boss' } });
      // The reason is the caller's prose: never recorded.
      expect(JSON.stringify(gRows)).not.toContain('hunter2');
      const hRows = await actions('audit-h');
      expect(hRows.map((r) => r.action)).toEqual(['key.created', 'import.applied']);
      expect(hRows[1].entry.details).toMatchObject({ created: expect.any(Number), refs: expect.any(Array) });
      for (const tok of [boss, importer]) expect((await g.http('GET', '/v1/audit/verify', { token: tok })).body).toMatchObject({ chainValid: true, anomalies: [] });

      // A cancel of a run nobody executes (a pending workflow run) is recorded with its action.
      const [{ id: runId }] = (await g.ds.query(`INSERT INTO "run" ("tenant", "kind", "status", "metadata") VALUES ('audit-g', 'workflow', 'pending', '{}'::jsonb) RETURNING "id"`)) as Array<{ id: string }>;
      const cancelled = await g.http('POST', `/v1/runs/${runId}/cancel`, { token: boss, body: { reason: 'stop' } });
      expect(cancelled.status).toBe(200);
      const last = (await actions('audit-g')).pop()!;
      expect(last).toMatchObject({ action: 'run.cancel-requested', entry: { resource: { type: 'run', id: runId }, details: { reason: 'stop', statusBefore: 'pending' } } });
      // Cancelling the finished run again changes nothing and records nothing.
      expect((await g.http('POST', `/v1/runs/${runId}/cancel`, { token: boss, body: {} })).status).toBe(200);
      expect((await actions('audit-g')).length).toBe(4);
    } finally {
      await g.close();
    }
  });

  it('the time-based cadence seals a quiet chain\'s newest entries on one replica per slot', async () => {
    const q = await t.key({ tenant: 'audit-q', principal: 'q', roles: ['admin'] });
    await t.http('POST', '/v1/keys', { token: q, body: { principal: 'q-0', scopes: ['runs:read'] } });
    const cps = async () => (await verify(q)).body.checkpoints.map((c: { atSequence: number }) => c.atSequence);
    expect(await cps()).toEqual([1]);
    const tasks = t.app.get(PeriodicTaskService);
    await tasks.trigger(AUDIT_SEAL_TASK);
    await tasks.tick();
    expect(await cps()).toEqual([1, 2]);
    const res = await verify(q);
    expect(res.body).toMatchObject({ chainValid: true, checkpointsValid: true, anomalies: [] });
    // Nothing new: nothing to seal; the entry-count cadence carries on from the sealed head.
    expect(await t.app.get(AuditLogService).sealPending()).toBe(0);
    for (let i = 1; i <= 3; i++) await t.http('POST', '/v1/keys', { token: q, body: { principal: `q-${i}`, scopes: ['runs:read'] } });
    expect(await cps()).toEqual([1, 2, 5]);
  });

  it('the log refuses in-place updates and deletes', async () => {
    await expect(t.ds.query(`UPDATE "audit_entry" SET "action" = 'x' WHERE "tenant" = 'audit-a' AND "seq" = 2`)).rejects.toThrow(/append-only/);
    await expect(t.ds.query(`DELETE FROM "audit_entry" WHERE "tenant" = 'audit-a' AND "seq" = 2`)).rejects.toThrow(/append-only/);
    await expect(t.ds.query(`UPDATE "audit_checkpoint" SET "signature" = 'x' WHERE "tenant" = 'audit-a'`)).rejects.toThrow(/append-only/);
  });

  describe('tampering behind the trigger (a privileged insider) is detected', () => {
    /** Runs `sql` with the append-only triggers off, as a table owner could. */
    async function behindTheTrigger(sql: string, params: unknown[] = []): Promise<void> {
      await t.ds.transaction(async (m) => {
        await m.query(`ALTER TABLE "audit_entry" DISABLE TRIGGER "audit_entry_append_only"`);
        await m.query(sql, params);
        await m.query(`ALTER TABLE "audit_entry" ENABLE TRIGGER "audit_entry_append_only"`);
      });
    }

    it('a rewritten middle entry breaks the next link: chainValid false with the anomaly, and its checkpoint no longer verifies', async () => {
      const c = await t.key({ tenant: 'audit-c', principal: 'c', roles: ['admin'] });
      for (let i = 0; i < 4; i++) await t.http('POST', '/v1/keys', { token: c, body: { principal: `c-${i}`, scopes: ['runs:read'] } });
      expect((await verify(c)).body.chainValid).toBe(true);
      const rows = await entries('audit-c');
      expect(rows.length).toBe(5);
      await behindTheTrigger(`UPDATE "audit_entry" SET "entry" = jsonb_set("entry", '{details,scopes}', '["runs:read","keys:manage"]') WHERE "tenant" = 'audit-c' AND "seq" = 3`);
      const res = await verify(c);
      expect(res.status).toBe(200);
      expect(validateResult(res.body)).toBe(true);
      expect(res.body.chainValid).toBe(false);
      expect(res.body.checkpointsValid).toBe(false); // entries 2..4 are anchored by the checkpoint at 4
      expect(res.body.anomalies).toEqual([{ atSeq: 4, expectedPrevHash: expect.stringMatching(/^[0-9a-f]{64}$/), actualPrevHash: rows[3].entry.prevHash }]);
      expect(res.body.anomalies[0].expectedPrevHash).not.toBe(rows[3].entry.prevHash);
      // Outside the window the chain still verifies.
      expect((await verify(c, 'fromSeq=5&toSeq=5')).body).toMatchObject({ chainValid: true, anomalies: [] });
    });

    it('a rewritten head entry (no successor yet) is caught against the chain head', async () => {
      const d = await t.key({ tenant: 'audit-d', principal: 'd', roles: ['admin'] });
      await t.http('POST', '/v1/keys', { token: d, body: { principal: 'd-0', scopes: ['runs:read'] } });
      expect((await verify(d)).body.chainValid).toBe(true);
      await behindTheTrigger(`UPDATE "audit_entry" SET "entry" = jsonb_set("entry", '{actor,principal}', '"someone-else"') WHERE "tenant" = 'audit-d' AND "seq" = 2`);
      const res = await verify(d);
      expect(res.body.chainValid).toBe(false);
      expect(res.body.anomalies).toHaveLength(1);
      expect(res.body.anomalies[0].atSeq).toBe(3);
    });

    it('a deleted entry is a gap', async () => {
      const e = await t.key({ tenant: 'audit-e', principal: 'e', roles: ['admin'] });
      for (let i = 0; i < 3; i++) await t.http('POST', '/v1/keys', { token: e, body: { principal: `e-${i}`, scopes: ['runs:read'] } });
      await behindTheTrigger(`DELETE FROM "audit_entry" WHERE "tenant" = 'audit-e' AND "seq" = 2`);
      const res = await verify(e);
      expect(res.body.chainValid).toBe(false);
      expect(res.body.anomalies).toEqual([{ atSeq: 2, expectedPrevHash: expect.stringMatching(/^[0-9a-f]{64}$/), actualPrevHash: '' }]);
    });
  });

  it('concurrent appends on two replicas never fork the chain', async () => {
    const other = await createTestApp({ database: t.databaseName, env: ENV });
    try {
      const f = await t.key({ tenant: 'audit-f', principal: 'f', roles: ['admin'] });
      const mints = Array.from({ length: 24 }, (_, i) => (i % 2 ? other : t).http('POST', '/v1/keys', { token: f, body: { principal: `f-${i}`, scopes: ['runs:read'] } }));
      for (const r of await Promise.all(mints)) expect(r.status).toBe(201);
      const rows = await entries('audit-f');
      expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
      for (let i = 1; i < rows.length; i++) expect(rows[i].entry.prevHash).toBe(sha(jcs(rows[i - 1].entry)));
      const res = await other.http('GET', '/v1/audit/verify?fromSeq=0&toSeq=100', { token: f });
      expect(res.body).toMatchObject({ chainValid: true, anomalies: [] });
      expect(res.body.checkpoints.map((c: { atSequence: number }) => c.atSequence)).toEqual([1, 4, 7, 10, 13, 16, 19, 22, 25]);
    } finally {
      await other.close();
    }
  });
});
