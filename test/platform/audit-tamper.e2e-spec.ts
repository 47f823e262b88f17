/**
 * Tamper tests of the audit log against what an insider with the database can do behind the
 * append-only triggers: (a) delete the newest entries with their checkpoint and rewind the chain
 * head; (b) rewrite entries consistently and re-sign every checkpoint with a key of their own;
 * and (c) the pinned head's happy path. Each attack is first shown to go unnoticed where the old
 * host left it unnoticed (no pin, no sink; the signing key in the database), then caught with the
 * setting that stops it (a verifier's pin, the checkpoint sink, a signing key outside the database).
 */
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { auditVerify } from '../../src/cli/audit.cli';
import { AuditCheckpointExporter } from '../../src/platform/audit/audit-checkpoint.exporter';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { fingerprintOf, rewriteAndResign, truncateTail } from '../support/audit-tamper';
import { sink } from '../support/sink';
import { createTestApp, TestApp } from '../support/test-app';

const schemas = SchemaRegistry.shared();
const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'audit-tamper-'));

interface Checkpoint {
  checkpoint: string;
  atSequence: number;
  merkleRoot: string;
  signature: string;
}

/** A fresh Ed25519 key written as the operator's key file (PKCS#8 PEM, owner-only). */
function keyFile(dir: string): { file: string; spki: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const file = path.join(dir, 'audit-signing-key.pem');
  fs.writeFileSync(file, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  return { file, spki: publicKey.export({ format: 'der', type: 'spki' }).toString('base64') };
}

async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = t.app.getHttpServer().address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
}

async function mint(t: TestApp, token: string, n: number, prefix: string): Promise<void> {
  for (let i = 0; i < n; i++) expect((await t.http('POST', '/v1/keys', { token, body: { principal: `${prefix}-${i}`, scopes: ['runs:read'] } })).status).toBe(201);
}

async function checkpointsOf(t: TestApp, token: string): Promise<Checkpoint[]> {
  const res = await t.http('GET', '/v1/audit/verify', { token });
  expect(res.status).toBe(200);
  return res.body.checkpoints;
}

function pinOf(file: string): Checkpoint {
  const state = JSON.parse(fs.readFileSync(file, 'utf8')) as { pins: Record<string, Checkpoint> };
  const pins = Object.values(state.pins);
  expect(pins).toHaveLength(1);
  return pins[0];
}

function sinkLines(file: string): Array<Checkpoint & { tenant: string; keyFingerprint: string }> {
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

describe('audit log: tail truncation and the pinned head', () => {
  const dir = tmp();
  const key = keyFile(dir);
  const sinkFile = path.join(dir, 'checkpoints.jsonl');
  const pinFile = path.join(dir, 'state', 'audit-pins.json');
  let t: TestApp;
  let url: string;
  let admin: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_AUDIT_CHECKPOINT_INTERVAL: '3', OPENWOP_AUDIT_SIGNING_KEY_FILE: key.file, OPENWOP_AUDIT_EXPORT_FILE: sinkFile } });
    url = await listen(t);
    // Entry 1 (this key's own mint) is checkpointed at once; 2..4 are checkpointed at 4.
    admin = await t.key({ tenant: 'trunc', principal: 'boss', roles: ['admin'] });
    await mint(t, admin, 3, 'a');
  });
  afterAll(async () => t?.close());

  const verifyCli = async (opts: Parameters<typeof auditVerify>[1]) => {
    const out = sink();
    const err = sink();
    const code = await auditVerify({ url, key: admin, out, err }, opts);
    return { code, out: out.text(), err: err.text() };
  };

  it('(c) a pinned head: the first pin is taken at a named checkpoint, and a longer chain verifies and advances it', async () => {
    const [, cp4] = await checkpointsOf(t, admin);
    expect(cp4.atSequence).toBe(4);
    // No pin yet: "pinned" has nothing to start from.
    await expect(verifyCli({ since: 'pinned', pinFile })).rejects.toThrow(/no pinned checkpoint/i);
    const first = await verifyCli({ since: cp4.checkpoint, pinFile });
    expect([first.code, first.out]).toEqual([0, expect.stringContaining(`pinned checkpoint ${cp4.checkpoint} at 4 holds`)]);
    expect(pinOf(pinFile)).toMatchObject({ checkpoint: cp4.checkpoint, atSequence: 4, merkleRoot: cp4.merkleRoot, signature: cp4.signature });
    expect(fs.statSync(pinFile).mode & 0o077).toBe(0);

    await mint(t, admin, 3, 'b');
    const cp7 = (await checkpointsOf(t, admin)).pop()!;
    expect(cp7.atSequence).toBe(7);
    const again = await verifyCli({ since: 'pinned', pinFile });
    expect(again.code).toBe(0);
    expect(again.out).toContain(`pinned checkpoint ${cp4.checkpoint} at 4 holds`);
    expect(again.out).toContain(`pin advanced to checkpoint ${cp7.checkpoint} at 7`);
    expect(pinOf(pinFile)).toMatchObject({ checkpoint: cp7.checkpoint, atSequence: 7, merkleRoot: cp7.merkleRoot, signature: cp7.signature });
  });

  it('(a) deleting the newest entries with their checkpoint and rewinding the head verifies as valid; a pinned verifier and the sink catch it', async () => {
    const cp7 = (await checkpointsOf(t, admin)).pop()!;
    await t.app.get(AuditCheckpointExporter).drain();
    expect(sinkLines(sinkFile).filter((l) => l.tenant === 'trunc').map((l) => l.atSequence)).toEqual([1, 4, 7]);

    await truncateTail(t.ds, 'trunc', 4);

    // The attack on its own: the shorter chain is consistent, so the host's verdict is "valid".
    const plain = await t.http('GET', '/v1/audit/verify', { token: admin });
    expect(plain.body).toMatchObject({ chainValid: true, anomalies: [] });
    expect(plain.body.checkpoints.map((c: Checkpoint) => c.atSequence)).toEqual([1, 4]);

    // A verifier holding the pin fails loudly, and keeps its pin.
    const pinned = await verifyCli({ since: 'pinned', pinFile });
    expect(pinned.code).toBe(1);
    expect(pinned.out).toMatch(new RegExp(`PINNED CHECKPOINT ${cp7.checkpoint} at 7 is gone`));
    expect(pinOf(pinFile)).toMatchObject({ checkpoint: cp7.checkpoint, atSequence: 7 });

    // The pin given to the route: an anomaly in the closed result shape.
    const routed = await t.http('GET', `/v1/audit/verify?fromSeq=0&toSeq=100&pinnedSeq=7&pinnedRoot=${cp7.merkleRoot}`, { token: admin });
    expect(routed.status).toBe(200);
    expect(schemas.validate('audit-verify-result', routed.body)).toEqual([]);
    expect(routed.body).toMatchObject({ chainValid: false, anomalies: [{ atSeq: 7, expectedPrevHash: cp7.merkleRoot, actualPrevHash: '' }] });

    // The sink still holds the checkpoint the database lost; comparing them names it.
    expect(sinkLines(sinkFile).find((l) => l.checkpoint === cp7.checkpoint)).toMatchObject({ tenant: 'trunc', atSequence: 7, merkleRoot: cp7.merkleRoot, signature: cp7.signature });
    const compared = await verifyCli({ sinkFile });
    expect(compared.code).toBe(1);
    expect(compared.out).toContain(`checkpoint ${cp7.checkpoint} at 7 is in the sink but not on the host`);

    // Growing the chain back past the pin does not hide it: the checkpoint at 7 is another one now.
    await mint(t, admin, 3, 'c');
    const forged = (await checkpointsOf(t, admin)).pop()!;
    expect(forged.atSequence).toBe(7);
    expect(forged.merkleRoot).not.toBe(cp7.merkleRoot);
    const later = await verifyCli({ since: 'pinned', pinFile });
    expect(later.code).toBe(1);
    expect(later.out).toMatch(new RegExp(`PINNED CHECKPOINT ${cp7.checkpoint} at 7 now differs`));
    const routedLater = await t.http('GET', `/v1/audit/verify?pinnedSeq=7&pinnedRoot=${cp7.merkleRoot}`, { token: admin });
    expect(routedLater.body.anomalies).toEqual([{ atSeq: 7, expectedPrevHash: cp7.merkleRoot, actualPrevHash: forged.merkleRoot }]);
  });

  it('a malformed pin on the route is refused with the canonical envelope', async () => {
    for (const q of ['pinnedSeq=4', `pinnedRoot=${'a'.repeat(64)}`, 'pinnedSeq=4&pinnedRoot=xyz', `pinnedSeq=-1&pinnedRoot=${'a'.repeat(64)}`, `fromSeq=5&toSeq=9&pinnedSeq=4&pinnedRoot=${'a'.repeat(64)}`]) {
      const res = await t.http('GET', `/v1/audit/verify?${q}`, { token: admin });
      expect([q, res.status, res.body.error, typeof res.body.message]).toEqual([q, 400, 'validation_error', 'string']);
    }
  });
});

describe('audit log: re-signing a rewritten chain', () => {
  const attacker = generateKeyPairSync('ed25519');
  const grantAdmin = (entry: Record<string, unknown>) => {
    (entry.details as Record<string, unknown>).scopes = ['runs:read', 'keys:manage'];
  };

  it('with the key in the database (the default), the rewrite re-signed with a key swapped into the database verifies as valid', async () => {
    const t = await createTestApp({ env: { OPENWOP_AUDIT_CHECKPOINT_INTERVAL: '3' } });
    try {
      const admin = await t.key({ tenant: 'resign-db', principal: 'boss', roles: ['admin'] });
      await mint(t, admin, 4, 'r');
      await rewriteAndResign(t.ds, 'resign-db', 3, grantAdmin, attacker.privateKey, fingerprintOf(attacker.publicKey));
      await t.ds.query(`UPDATE "host_secret" SET "value" = $1 WHERE "name" = 'audit-checkpoint-ed25519'`, [attacker.privateKey.export({ format: 'der', type: 'pkcs8' })]);
      // The next start reads the swapped key: it advertises it, and the rewritten chain verifies.
      const restarted = await createTestApp({ database: t.databaseName, env: { OPENWOP_AUDIT_CHECKPOINT_INTERVAL: '3' } });
      try {
        const advertised = (await restarted.http('GET', '/.well-known/openwop')).body.auth.auditLogIntegrity.checkpointPublicKey;
        expect(advertised).toBe(attacker.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'));
        const res = await restarted.http('GET', '/v1/audit/verify', { token: admin });
        expect(res.body).toMatchObject({ chainValid: true, checkpointsValid: true, anomalies: [] });
        // ...and the host said at start that its key is in the database.
        expect(restarted.logs.some((l) => /audit checkpoints are signed with the key kept in the database/.test(l) && /"level":(40|"warn")/.test(l))).toBe(true);
      } finally {
        await restarted.close();
      }
    } finally {
      await t.close();
    }
  });

  it('with a signing key outside the database, the same rewrite re-signed with any other key is reported', async () => {
    const key = keyFile(tmp());
    const t = await createTestApp({ env: { OPENWOP_AUDIT_CHECKPOINT_INTERVAL: '3', OPENWOP_AUDIT_SIGNING_KEY_FILE: key.file } });
    try {
      const url = await listen(t);
      const admin = await t.key({ tenant: 'resign-ext', principal: 'boss', roles: ['admin'] });
      await mint(t, admin, 4, 'r');
      // No key of the audit log is kept in the database.
      expect(await t.ds.query(`SELECT 1 FROM "host_secret" WHERE "name" = 'audit-checkpoint-ed25519'`)).toHaveLength(0);
      expect((await t.http('GET', '/.well-known/openwop')).body.auth.auditLogIntegrity.checkpointPublicKey).toBe(key.spki);
      expect((await t.http('GET', '/v1/audit/verify', { token: admin })).body).toMatchObject({ chainValid: true, anomalies: [] });
      const before = await checkpointsOf(t, admin);
      const configured = fingerprintOf(createPublicKey({ key: Buffer.from(key.spki, 'base64'), format: 'der', type: 'spki' }));

      // Under the attacker's own fingerprint, then claiming the configured key's.
      for (const fingerprint of [fingerprintOf(attacker.publicKey), configured]) {
        await rewriteAndResign(t.ds, 'resign-ext', 3, grantAdmin, attacker.privateKey, fingerprint);
        const res = await t.http('GET', '/v1/audit/verify?fromSeq=0&toSeq=100', { token: admin });
        expect(res.status).toBe(200);
        expect(schemas.validate('audit-verify-result', res.body)).toEqual([]);
        expect(res.body).toMatchObject({ chainValid: false, checkpointsValid: false });
        // One anomaly per re-signed checkpoint, at its sequence; no hash link is broken.
        expect(res.body.anomalies.map((a: { atSeq: number }) => a.atSeq)).toEqual(before.map((c) => c.atSequence));
        for (const a of res.body.anomalies) expect(a.expectedPrevHash).toMatch(/trusted key/);
      }
      // The command line, checking signatures against the advertised key itself, fails too.
      const out = sink();
      expect(await auditVerify({ url, key: admin, out, err: sink() }, {})).toBe(1);
      expect(out.text()).toMatch(/signature does NOT hold/);
    } finally {
      await t.close();
    }
  });
});
