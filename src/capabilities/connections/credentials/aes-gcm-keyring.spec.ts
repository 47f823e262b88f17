import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { AesGcmKeyring, parseKeyring } from './aes-gcm-keyring';
import { GENERATED_KEY_FILE, loadKeyring } from './config-key-provider';

const key = () => randomBytes(32).toString('base64');
const ctx = { tenant: 'acme', credentialId: '6f1c9a52-8a4e-4b1e-9a7d-0c4c4e7b9a10' };

describe('credential keyring (AES-256-GCM)', () => {
  it('seals under the first key, opens under any configured key, and never stores plaintext', () => {
    const k1 = key();
    const k2 = key();
    const old = new AesGcmKeyring(parseKeyring(`k1:${k1}`));
    const sealed = old.seal(Buffer.from('s3cret-value'), ctx);
    expect(sealed.keyId).toBe('k1');
    expect(Buffer.from(sealed.sealed).includes(Buffer.from('s3cret-value'))).toBe(false);
    const rotated = new AesGcmKeyring(parseKeyring(`k2:${k2},k1:${k1}`));
    expect(rotated.open(sealed, ctx).toString()).toBe('s3cret-value');
    expect(rotated.seal(Buffer.from('x'), ctx).keyId).toBe('k2');
    expect(rotated.currentKeyId).toBe('k2');
  });

  it('uses a fresh nonce per seal', () => {
    const ring = new AesGcmKeyring(parseKeyring(`k1:${key()}`));
    const a = ring.seal(Buffer.from('same'), ctx);
    const b = ring.seal(Buffer.from('same'), ctx);
    expect(Buffer.from(a.sealed).equals(Buffer.from(b.sealed))).toBe(false);
  });

  it('refuses to open under another tenant or id, a tampered ciphertext, or an unknown key', () => {
    const k1 = key();
    const ring = new AesGcmKeyring(parseKeyring(`k1:${k1}`));
    const sealed = ring.seal(Buffer.from('s3cret-value'), ctx);
    expect(() => ring.open(sealed, { ...ctx, tenant: 'globex' })).toThrow(/authentication/);
    expect(() => ring.open(sealed, { ...ctx, credentialId: 'other' })).toThrow(/authentication/);
    const tampered = Buffer.from(sealed.sealed);
    tampered[tampered.length - 1] ^= 1;
    expect(() => ring.open({ keyId: 'k1', sealed: tampered }, ctx)).toThrow(/authentication/);
    expect(() => ring.open({ keyId: 'k9', sealed: sealed.sealed }, ctx)).toThrow(/not configured/);
    expect(() => ring.open({ keyId: 'k1', sealed: Buffer.from([2, 1, 2]) }, ctx)).toThrow(/format/);
  });

  it('rejects malformed key specs without echoing key material', () => {
    const short = randomBytes(16).toString('base64');
    for (const spec of [`k1:${short}`, 'k1', `:${key()}`, `bad id:${key()}`, `k1:${key()},k1:${key()}`, 'k1:not base64!']) {
      let message = '';
      try {
        parseKeyring(spec);
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toMatch(/OPENWOP_CREDENTIAL_KEYS/);
      expect(message).not.toContain(short);
    }
    expect(() => new AesGcmKeyring([]).seal(Buffer.from('x'), ctx)).toThrow(/no credential encryption key/);
  });

  it('generates one key file (mode 0600) only in embedded mode, and reuses it', () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-keys-'));
    const otherDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-keys-'));
    try {
      const first = loadKeyring({ credentialKeys: '', databaseUrl: undefined, dataDir });
      expect(first.source).toBe('file');
      const file = path.join(dataDir, GENERATED_KEY_FILE);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const second = loadKeyring({ credentialKeys: '', databaseUrl: undefined, dataDir });
      expect(second.keys[0].key.equals(first.keys[0].key)).toBe(true);
      expect(loadKeyring({ credentialKeys: '', databaseUrl: 'postgres://x/y', dataDir: otherDir })).toEqual({ keys: [], source: 'none' });
      expect(loadKeyring({ credentialKeys: `env1:${key()}`, databaseUrl: 'postgres://x/y', dataDir }).source).toBe('env');
    } finally {
      for (const dir of [dataDir, otherDir]) fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
