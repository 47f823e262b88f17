import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { CredentialSealingContext, SealedCredential } from '@openwop-host/plugin-sdk';
import { KeyringError, KeyringKey } from '../../../platform/config/credential-keys';

// The keyring's format is configuration: parsed in the platform, where loading the configuration checks it.
export { KeyringError, parseKeyring } from '../../../platform/config/credential-keys';
export type { KeyringKey } from '../../../platform/config/credential-keys';

const FORMAT_VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

function aad(ctx: CredentialSealingContext): Buffer {
  // Binds a ciphertext to its row: a sealed value copied to another tenant or id does not open.
  return Buffer.from(`openwop-credential:v1:${ctx.tenant.length}:${ctx.tenant}:${ctx.credentialId}`, 'utf8');
}

/** AES-256-GCM under keys from configuration. Layout: version(1) | nonce(12) | tag(16) | ciphertext. */
export class AesGcmKeyring {
  constructor(private readonly keys: readonly KeyringKey[]) {}

  get currentKeyId(): string | undefined {
    return this.keys[0]?.id;
  }

  has(keyId: string): boolean {
    return this.keys.some((k) => k.id === keyId);
  }

  seal(plaintext: Uint8Array, ctx: CredentialSealingContext): SealedCredential {
    const current = this.keys[0];
    if (!current) throw new KeyringError('no credential encryption key is configured');
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', current.key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(ctx));
    const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    const sealed = Buffer.concat([Buffer.from([FORMAT_VERSION]), nonce, cipher.getAuthTag(), body]);
    return { keyId: current.id, sealed };
  }

  open(credential: SealedCredential, ctx: CredentialSealingContext): Buffer {
    const entry = this.keys.find((k) => k.id === credential.keyId);
    if (!entry) throw new KeyringError(`credential key "${credential.keyId}" is not configured`);
    const buf = Buffer.from(credential.sealed);
    if (buf.length < 1 + NONCE_BYTES + TAG_BYTES || buf[0] !== FORMAT_VERSION) throw new KeyringError('sealed credential has an unknown format');
    const nonce = buf.subarray(1, 1 + NONCE_BYTES);
    const tag = buf.subarray(1 + NONCE_BYTES, 1 + NONCE_BYTES + TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', entry.key, nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(aad(ctx));
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(buf.subarray(1 + NONCE_BYTES + TAG_BYTES)), decipher.final()]);
    } catch {
      throw new KeyringError('sealed credential failed authentication (wrong key, tenant or id)');
    }
  }
}
