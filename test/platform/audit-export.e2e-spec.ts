/**
 * Where the audit log's checkpoints go and who signs them: every sealed checkpoint is exported to
 * the configured sinks (an append-only JSON-lines file, a webhook) by the background worker, with
 * retries, off the request path; a KMS plugin can sign instead of a local key; and previous keys
 * listed as trusted keep the checkpoints they signed verifiable after a rotation.
 */
import { createPublicKey, generateKeyPairSync, verify as edVerify } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { auditVerify } from '../../src/cli/audit.cli';
import { sink } from '../support/sink';
import { createTestApp, TestApp } from '../support/test-app';
import { WebhookReceiver } from '../webhooks/webhook-receiver';
import { kmsKey } from '../fixtures/plugins/audit-signer-plugin';

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'audit-export-'));

interface Checkpoint {
  checkpoint: string;
  atSequence: number;
  merkleRoot: string;
  signature: string;
}

function keyFile(dir: string, name = 'key.pem'): { file: string; spki: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const file = path.join(dir, name);
  fs.writeFileSync(file, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  return { file, spki: publicKey.export({ format: 'der', type: 'spki' }).toString('base64') };
}

const signedBy = (spki: string, cp: Pick<Checkpoint, 'merkleRoot' | 'signature'>) =>
  edVerify(null, Buffer.from(cp.merkleRoot, 'hex'), createPublicKey({ key: Buffer.from(spki, 'base64'), format: 'der', type: 'spki' }), Buffer.from(cp.signature, 'base64'));

async function mint(t: TestApp, token: string, n: number, prefix: string): Promise<void> {
  for (let i = 0; i < n; i++) expect((await t.http('POST', '/v1/keys', { token, body: { principal: `${prefix}-${i}`, scopes: ['runs:read'] } })).status).toBe(201);
}

async function until(pred: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('audit checkpoint export', () => {
  const afterCleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const f of afterCleanup) await f();
  });

  it('the file sink: every checkpoint, sealed by an append or by the time cadence, is appended as one JSON line by the background worker', async () => {
    const dir = tmp();
    const file = path.join(dir, 'checkpoints.jsonl');
    const key = keyFile(dir);
    // The scheduler runs here, as on a production replica: the worker delivers without being asked.
    const t = await createTestApp({ env: { OPENWOP_SCHEDULER_ENABLED: 'true', OPENWOP_SCHEDULER_TICK_MS: '100', OPENWOP_AUDIT_CHECKPOINT_INTERVAL: '2', OPENWOP_AUDIT_SIGNING_KEY_FILE: key.file, OPENWOP_AUDIT_EXPORT_FILE: file } });
    try {
      const admin = await t.key({ tenant: 'sink-f', principal: 'boss', roles: ['admin'] });
      await mint(t, admin, 4, 'f');
      const inDb = async () => ((await t.http('GET', '/v1/audit/verify', { token: admin })).body.checkpoints as Checkpoint[]);
      const lines = () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);
      await until(async () => {
        const ids = new Set(lines().map((l) => l.checkpoint));
        const cps = await inDb();
        return cps.length >= 3 && cps.every((c) => ids.has(c.checkpoint));
      }, 'every checkpoint in the file');
      for (const cp of await inDb()) {
        const line = lines().find((l) => l.checkpoint === cp.checkpoint);
        expect(line).toEqual({
          type: 'openwop.audit.checkpoint',
          tenant: 'sink-f',
          checkpoint: cp.checkpoint,
          atSequence: cp.atSequence,
          prevAtSequence: expect.any(Number),
          merkleRoot: cp.merkleRoot,
          signature: cp.signature,
          keyFingerprint: expect.stringMatching(/^[0-9a-f]{32}$/),
          sealedAt: expect.any(String),
        });
        expect(signedBy(key.spki, line)).toBe(true);
      }
      await until(async () => ((await t.ds.query(`SELECT count(*)::int AS n FROM "audit_checkpoint_export"`)) as Array<{ n: number }>)[0].n === 0, 'the export outbox drained');
    } finally {
      await t.close();
    }
  });

  it('the webhook sink: each checkpoint is POSTed to the receiver through the egress guard, and retried after a failure', async () => {
    const receiver = await new WebhookReceiver().start();
    afterCleanup.push(() => receiver.close());
    receiver.statuses.push(503, 503);
    const t = await createTestApp({
      env: {
        OPENWOP_SCHEDULER_ENABLED: 'true',
        OPENWOP_AUDIT_CHECKPOINT_INTERVAL: '2',
        OPENWOP_AUDIT_SIGNING_KEY_FILE: keyFile(tmp()).file,
        OPENWOP_AUDIT_EXPORT_WEBHOOK_URL: `${receiver.url}/audit/checkpoints`,
        OPENWOP_WEBHOOK_ALLOW_PRIVATE: 'true',
        OPENWOP_WEBHOOK_ALLOWED_PORTS: '1024-65535',
      },
    });
    try {
      const admin = await t.key({ tenant: 'sink-w', principal: 'boss', roles: ['admin'] });
      // The receiver failing does not hold the request up.
      await mint(t, admin, 2, 'w');
      const cps = (await t.http('GET', '/v1/audit/verify', { token: admin })).body.checkpoints as Checkpoint[];
      expect(cps.map((c) => c.atSequence)).toEqual([1, 3]);
      const delivered = () => new Set(receiver.on('/audit/checkpoints').filter((r, i) => i >= 2).map((r) => r.body?.checkpoint));
      await receiver.waitFor(() => cps.every((c) => delivered().has(c.checkpoint)), 20_000);
      const first = receiver.received[0];
      expect(first.headers['content-type']).toBe('application/json');
      expect(first.body).toMatchObject({ type: 'openwop.audit.checkpoint', tenant: 'sink-w' });
      // The two failed attempts were retried, not dropped.
      expect(receiver.received.length).toBeGreaterThanOrEqual(cps.length + 2);
      await until(async () => ((await t.ds.query(`SELECT count(*)::int AS n FROM "audit_checkpoint_export"`)) as Array<{ n: number }>)[0].n === 0, 'the export outbox drained');
    } finally {
      await t.close();
    }
  });
});

describe('audit checkpoint signers', () => {
  it('a KMS plugin signs when OPENWOP_AUDIT_SIGNER names it: its key is advertised and no key is kept in the database', async () => {
    const plugin = path.join(__dirname, '../fixtures/plugins/audit-signer-plugin.ts');
    const t = await createTestApp({ env: { OPENWOP_PLUGINS: plugin, OPENWOP_PLUGINS_STRICT: 'true', OPENWOP_AUDIT_SIGNER: 'vendor.test.kms', OPENWOP_AUDIT_CHECKPOINT_INTERVAL: '2' } });
    try {
      const admin = await t.key({ tenant: 'kms', principal: 'boss', roles: ['admin'] });
      await mint(t, admin, 2, 'k');
      expect((await t.http('GET', '/.well-known/openwop')).body.auth.auditLogIntegrity.checkpointPublicKey).toBe(kmsKey().spki);
      const res = await t.http('GET', '/v1/audit/verify', { token: admin });
      expect(res.body).toMatchObject({ chainValid: true, checkpointsValid: true, anomalies: [] });
      expect(res.body.checkpoints.length).toBe(2);
      for (const cp of res.body.checkpoints) expect(signedBy(kmsKey().spki, cp)).toBe(true);
      expect(kmsKey().signed).toBeGreaterThanOrEqual(2);
      expect(await t.ds.query(`SELECT 1 FROM "host_secret" WHERE "name" = 'audit-checkpoint-ed25519'`)).toHaveLength(0);
    } finally {
      await t.close();
    }
  });

  it('a signer that is not registered, or a signer beside a key, stops the start', async () => {
    await expect(createTestApp({ env: { OPENWOP_AUDIT_SIGNER: 'vendor.missing' } })).rejects.toThrow(/OPENWOP_AUDIT_SIGNER "vendor.missing" is not a registered audit checkpoint signer/);
    await expect(createTestApp({ env: { OPENWOP_AUDIT_SIGNER: 'vendor.test.kms', OPENWOP_AUDIT_SIGNING_KEY_FILE: keyFile(tmp()).file } })).rejects.toThrow(/OPENWOP_AUDIT_SIGNER .* OPENWOP_AUDIT_SIGNING_KEY_FILE/);
  });

  it('rotation: checkpoints signed under a previous key verify while it is listed in OPENWOP_AUDIT_TRUSTED_KEYS, and are reported once it is not', async () => {
    const dir = tmp();
    const oldKey = keyFile(dir, 'old.pem');
    const newKey = keyFile(dir, 'new.pem');
    const t = await createTestApp({ env: { OPENWOP_AUDIT_CHECKPOINT_INTERVAL: '2', OPENWOP_AUDIT_SIGNING_KEY_FILE: oldKey.file } });
    try {
      const admin = await t.key({ tenant: 'rot', principal: 'boss', roles: ['admin'] });
      await mint(t, admin, 2, 'o');
      // The host restarted with the new key, the old one trusted.
      const rotated = await createTestApp({ database: t.databaseName, env: { OPENWOP_AUDIT_CHECKPOINT_INTERVAL: '2', OPENWOP_AUDIT_SIGNING_KEY_FILE: newKey.file, OPENWOP_AUDIT_TRUSTED_KEYS: oldKey.spki } });
      try {
        await mint(rotated, admin, 2, 'n');
        const res = await rotated.http('GET', '/v1/audit/verify', { token: admin });
        expect(res.body).toMatchObject({ chainValid: true, checkpointsValid: true, anomalies: [] });
        const cps = res.body.checkpoints as Checkpoint[];
        expect(cps.map((c) => c.atSequence)).toEqual([1, 3, 5]);
        expect(cps.map((c) => signedBy(newKey.spki, c))).toEqual([false, false, true]);
        expect((await rotated.http('GET', '/.well-known/openwop')).body.auth.auditLogIntegrity.checkpointPublicKey).toBe(newKey.spki);

        // The command line checks against the advertised key and the keys it is told to trust.
        await rotated.app.listen({ port: 0, host: '127.0.0.1' });
        const addr = rotated.app.getHttpServer().address();
        const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
        expect(await auditVerify({ url, key: admin, out: sink(), err: sink() }, {})).toBe(1);
        expect(await auditVerify({ url, key: admin, out: sink(), err: sink() }, { trustedKeys: [oldKey.spki] })).toBe(0);
      } finally {
        await rotated.close();
      }
      const untrusted = await createTestApp({ database: t.databaseName, env: { OPENWOP_AUDIT_SIGNING_KEY_FILE: newKey.file } });
      try {
        const res = await untrusted.http('GET', '/v1/audit/verify', { token: admin });
        expect(res.body).toMatchObject({ chainValid: false, checkpointsValid: false });
        expect(res.body.anomalies.map((a: { atSeq: number }) => a.atSeq)).toEqual([1, 3]);
      } finally {
        await untrusted.close();
      }
    } finally {
      await t.close();
    }
  });
});
