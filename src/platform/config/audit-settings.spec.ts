import { generateKeyPairSync } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { auditExportSinks, loadAuditSettings } from './audit-settings';
import { ConfigError } from './config-error';
import { loadHostConfig } from './host-config';

const EGRESS = { allowPrivate: false, allowedPorts: [[443, 443]] as const };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'audit-settings-'));
const ed = generateKeyPairSync('ed25519');
const pem = ed.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
const spki = ed.publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
const keyFile = path.join(dir, 'key.pem');
fs.writeFileSync(keyFile, pem, { mode: 0o600 });

const load = (env: Record<string, string>) => loadAuditSettings(env, EGRESS);

describe('audit settings', () => {
  it('defaults: no key (the database one), no signer, no trusted keys, no sinks', () => {
    const a = load({});
    expect(a).toEqual({ checkpointIntervalEntries: 1000, checkpointIntervalSeconds: 300, trustedKeys: [], exportFile: undefined, exportWebhookUrl: undefined });
    expect(auditExportSinks(a)).toEqual([]);
  });

  it('reads the key from a file (PEM or DER), and inline', () => {
    expect(load({ OPENWOP_AUDIT_SIGNING_KEY_FILE: keyFile })).toMatchObject({ signingKeySource: 'OPENWOP_AUDIT_SIGNING_KEY_FILE', signingKey: expect.any(String) });
    const der = path.join(dir, 'key.der');
    fs.writeFileSync(der, ed.privateKey.export({ format: 'der', type: 'pkcs8' }));
    expect(load({ OPENWOP_AUDIT_SIGNING_KEY_FILE: der }).signingKey).toBe(load({ OPENWOP_AUDIT_SIGNING_KEY_FILE: keyFile }).signingKey);
    expect(load({ OPENWOP_AUDIT_SIGNING_KEY: pem })).toMatchObject({ signingKeySource: 'OPENWOP_AUDIT_SIGNING_KEY', signingKey: pem.trim() });
  });

  it('refuses, with the setting named: a missing or unreadable key file, a key that is not Ed25519, two keys, a key and a signer', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ OPENWOP_AUDIT_SIGNING_KEY_FILE: path.join(dir, 'missing.pem') }, /OPENWOP_AUDIT_SIGNING_KEY_FILE: cannot read .*missing\.pem \(ENOENT\)/],
      [{ OPENWOP_AUDIT_SIGNING_KEY_FILE: dir }, /OPENWOP_AUDIT_SIGNING_KEY_FILE: cannot read/],
      [{ OPENWOP_AUDIT_SIGNING_KEY: 'not a key' }, /OPENWOP_AUDIT_SIGNING_KEY must be an Ed25519 private key/],
      [{ OPENWOP_AUDIT_SIGNING_KEY: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() }, /a ec key/],
      [{ OPENWOP_AUDIT_SIGNING_KEY: pem, OPENWOP_AUDIT_SIGNING_KEY_FILE: keyFile }, /Set one of OPENWOP_AUDIT_SIGNING_KEY and OPENWOP_AUDIT_SIGNING_KEY_FILE/],
      [{ OPENWOP_AUDIT_SIGNER: 'acme.kms', OPENWOP_AUDIT_SIGNING_KEY_FILE: keyFile }, /OPENWOP_AUDIT_SIGNER names a signer and OPENWOP_AUDIT_SIGNING_KEY_FILE a key/],
    ];
    const notPem = path.join(dir, 'junk.pem');
    fs.writeFileSync(notPem, 'junk');
    cases.push([{ OPENWOP_AUDIT_SIGNING_KEY_FILE: notPem }, /OPENWOP_AUDIT_SIGNING_KEY_FILE \(.*junk\.pem\) must be an Ed25519 private key/]);
    for (const [env, message] of cases) {
      expect(() => load(env)).toThrow(ConfigError);
      expect(() => load(env)).toThrow(message);
    }
  });

  it('trusted keys: base64 SPKI Ed25519 public keys, each checked', () => {
    const other = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
    expect(load({ OPENWOP_AUDIT_TRUSTED_KEYS: ` ${spki} , ${other} ` }).trustedKeys).toEqual([spki, other]);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
    expect(() => load({ OPENWOP_AUDIT_TRUSTED_KEYS: `${spki},${rsa}` })).toThrow(/OPENWOP_AUDIT_TRUSTED_KEYS: entry 2 is not an Ed25519 public key/);
    expect(() => load({ OPENWOP_AUDIT_TRUSTED_KEYS: 'abc' })).toThrow(/entry 1/);
  });

  it('sinks: a file in a writable folder, a webhook URL the egress guard accepts', () => {
    const file = path.join(dir, 'checkpoints.jsonl');
    const a = load({ OPENWOP_AUDIT_EXPORT_FILE: file, OPENWOP_AUDIT_EXPORT_WEBHOOK_URL: 'https://audit.example.com/checkpoints' });
    expect(a).toMatchObject({ exportFile: file, exportWebhookUrl: 'https://audit.example.com/checkpoints' });
    expect(auditExportSinks(a)).toEqual(['file', 'webhook']);
    expect(() => load({ OPENWOP_AUDIT_EXPORT_FILE: path.join(dir, 'no-such-folder', 'x.jsonl') })).toThrow(/OPENWOP_AUDIT_EXPORT_FILE: the folder .* does not exist or is not writable/);
    expect(() => load({ OPENWOP_AUDIT_EXPORT_FILE: dir })).toThrow(/is not a file/);
    for (const url of ['http://audit.example.com/x', 'https://10.0.0.1/x', 'https://user:pw@audit.example.com/x', 'https://audit.example.com:8443/x', 'nope']) {
      expect(() => load({ OPENWOP_AUDIT_EXPORT_WEBHOOK_URL: url })).toThrow(/OPENWOP_AUDIT_EXPORT_WEBHOOK_URL is refused: /);
    }
    // The webhooks' relaxations hold here too.
    expect(loadAuditSettings({ OPENWOP_AUDIT_EXPORT_WEBHOOK_URL: 'http://127.0.0.1:9000/x' }, { allowPrivate: true, allowedPorts: [[9000, 9000]] }).exportWebhookUrl).toBe('http://127.0.0.1:9000/x');
  });

  it('is part of the host configuration, with the webhooks\' egress settings', () => {
    expect(() => loadHostConfig({ OPENWOP_AUDIT_EXPORT_WEBHOOK_URL: 'http://127.0.0.1:9000/x' })).toThrow(ConfigError);
    expect(loadHostConfig({ OPENWOP_AUDIT_EXPORT_WEBHOOK_URL: 'http://127.0.0.1:9000/x', OPENWOP_WEBHOOK_ALLOW_PRIVATE: 'true', OPENWOP_WEBHOOK_ALLOWED_PORTS: '9000' }).audit.exportWebhookUrl).toBe('http://127.0.0.1:9000/x');
  });
});
