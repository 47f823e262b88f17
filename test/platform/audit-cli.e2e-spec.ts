/** `openwop-host audit verify` against a listening host: the host's verdict, and every checkpoint signature checked client-side. */
import { createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildCli } from '../../src/cli';
import { auditKeygen, auditVerify, checkpointSignatureHolds } from '../../src/cli/audit.cli';
import { loadAuditSettings } from '../../src/platform/config/audit-settings';
import { createTestApp, TestApp } from '../support/test-app';
import { sink } from '../support/sink';


describe('audit CLI', () => {
  let t: TestApp;
  let url: string;
  let auditor: string;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.getHttpServer().address();
    url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    // Key mints are audited: the tenant's chain has entries, and the first one is checkpointed.
    auditor = await t.key({ tenant: 'audit-cli', principal: 'auditor', scopes: ['audit:read'] });
    for (let i = 0; i < 3; i++) await t.key({ tenant: 'audit-cli', principal: `p${i}`, scopes: ['runs:read'] });
  });

  afterAll(async () => t?.close());

  it('checks an Ed25519 checkpoint signature over the Merkle root against an SPKI key, and refuses a forged one', () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const spki = publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
    const merkleRoot = 'ab'.repeat(32);
    const signature = sign(null, Buffer.from(merkleRoot, 'hex'), privateKey).toString('base64');
    expect(checkpointSignatureHolds(spki, { merkleRoot, signature })).toBe(true);
    expect(checkpointSignatureHolds(spki, { merkleRoot: 'cd'.repeat(32), signature })).toBe(false);
    const other = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
    expect(checkpointSignatureHolds(other, { merkleRoot, signature })).toBe(false);
    expect(checkpointSignatureHolds('not a key', { merkleRoot, signature })).toBe(false);
  });

  it('exit 0 on an intact chain, with every signature checked here', async () => {
    const out = sink();
    const err = sink();
    expect(await auditVerify({ url, key: auditor, out, err }, {})).toBe(0);
    expect(out.text()).toMatch(/chain valid, checkpoints valid \(([1-9]\d*)\)/);
    const n = /\((\d+)\)/.exec(out.text())![1];
    expect(out.text()).toContain(`${n} of ${n} hold`);
    const json = sink();
    expect(await auditVerify({ url, key: auditor, out: json, err }, { from: 1, to: 2, json: true })).toBe(0);
    expect(JSON.parse(json.text())).toMatchObject({ fromSeq: 1, toSeq: 2, chainValid: true, ok: true, badSignatures: [] });
  });

  it('exit 1 once an entry was changed behind the append-only trigger, naming the anomaly', async () => {
    await t.ds.transaction(async (m) => {
      await m.query(`ALTER TABLE "audit_entry" DISABLE TRIGGER "audit_entry_append_only"`);
      await m.query(`UPDATE "audit_entry" SET "entry" = jsonb_set("entry", '{actor,principal}', '"someone-else"') WHERE "tenant" = 'audit-cli' AND "seq" = 2`);
      await m.query(`ALTER TABLE "audit_entry" ENABLE TRIGGER "audit_entry_append_only"`);
    });
    const out = sink();
    expect(await auditVerify({ url, key: auditor, out, err: sink() }, {})).toBe(1);
    expect(out.text()).toMatch(/chain BROKEN/);
    expect(out.text()).toMatch(/anomaly at \d+/);
  });

  it('keygen writes an owner-only Ed25519 key file the host accepts, and never overwrites one unless forced; it needs no API key', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'audit-keygen-'));
    const file = path.join(dir, 'audit.pem');
    const out = sink();
    expect(auditKeygen({ out: file }, { out })).toBe(0);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const spki = /public key \(base64 SPKI, advertised as checkpointPublicKey\): (\S+)/.exec(out.text())![1];
    expect(createPublicKey({ key: Buffer.from(spki, 'base64'), format: 'der', type: 'spki' }).asymmetricKeyType).toBe('ed25519');
    expect(out.text()).toContain(`OPENWOP_AUDIT_SIGNING_KEY_FILE=${file}`);
    expect(loadAuditSettings({ OPENWOP_AUDIT_SIGNING_KEY_FILE: file }, { allowPrivate: false, allowedPorts: [[443, 443]] }).signingKeySource).toBe('OPENWOP_AUDIT_SIGNING_KEY_FILE');
    const before = fs.readFileSync(file, 'utf8');
    expect(() => auditKeygen({ out: file }, { out: sink() })).toThrow(/exists: give --force/);
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
    expect(auditKeygen({ out: file, force: true }, { out: sink() })).toBe(0);
    expect(fs.readFileSync(file, 'utf8')).not.toBe(before);

    // Through the command tree: no --key, no OPENWOP_API_KEY, and still it runs.
    const saved = { key: process.env.OPENWOP_API_KEY, exitCode: process.exitCode };
    const write = process.stdout.write;
    delete process.env.OPENWOP_API_KEY;
    process.stdout.write = (() => true) as typeof process.stdout.write;
    try {
      await buildCli().exitOverride().parseAsync(['node', 'openwop-host', 'audit', 'keygen', '--out', path.join(dir, 'second.pem')]);
      expect(process.exitCode).toBe(0);
    } finally {
      process.stdout.write = write;
      process.exitCode = saved.exitCode;
      if (saved.key !== undefined) process.env.OPENWOP_API_KEY = saved.key;
    }
    expect(fs.existsSync(path.join(dir, 'second.pem'))).toBe(true);
    // verify still needs a key.
    await expect(buildCli().exitOverride().parseAsync(['node', 'openwop-host', 'audit', '--url', url, 'verify'])).rejects.toThrow(/--key/);
  });

  it('verify --since and --pin-file reach the pin through the command tree', async () => {
    const pinFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'audit-pin-')), 'pins.json');
    const res = await t.http('GET', '/v1/audit/verify?fromSeq=0&toSeq=1', { token: auditor });
    const first = res.body.checkpoints[0] as { checkpoint: string };
    const saved = process.exitCode;
    const write = process.stdout.write;
    process.stdout.write = (() => true) as typeof process.stdout.write;
    try {
      await buildCli().exitOverride().parseAsync(['node', 'openwop-host', 'audit', '--url', url, '--key', auditor, 'verify', '--from', '1', '--to', '1', '--since', first.checkpoint, '--pin-file', pinFile]);
      expect(process.exitCode).toBe(0);
    } finally {
      process.stdout.write = write;
      process.exitCode = saved;
    }
    const pins = Object.values((JSON.parse(fs.readFileSync(pinFile, 'utf8')) as { pins: Record<string, { checkpoint: string; atSequence: number }> }).pins);
    expect(pins).toEqual([expect.objectContaining({ checkpoint: first.checkpoint, atSequence: 1 })]);
  });

  it('a key without audit:read is refused before anything is checked', async () => {
    const reader = await t.key({ tenant: 'audit-cli', principal: 'reader', scopes: ['runs:read'] });
    await expect(auditVerify({ url, key: reader, out: sink(), err: sink() }, {})).rejects.toThrow(/403/);
  });
});
