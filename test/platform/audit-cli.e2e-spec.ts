/** `openwop-host audit verify` against a listening host: the host's verdict, and every checkpoint signature checked client-side. */
import { generateKeyPairSync, sign } from 'node:crypto';
import { auditVerify, checkpointSignatureHolds } from '../../src/cli/audit.cli';
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

  it('a key without audit:read is refused before anything is checked', async () => {
    const reader = await t.key({ tenant: 'audit-cli', principal: 'reader', scopes: ['runs:read'] });
    await expect(auditVerify({ url, key: reader, out: sink(), err: sink() }, {})).rejects.toThrow(/403/);
  });
});
