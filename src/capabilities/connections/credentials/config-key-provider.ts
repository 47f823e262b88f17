import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  CredentialKeyProvider,
  CredentialKeyProviderContract,
  CredentialSealingContext,
  SealedCredential,
} from '@openwop-host/plugin-sdk';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import { AesGcmKeyring, KeyringKey, parseKeyring } from './aes-gcm-keyring';

export const CONFIG_KEY_PROVIDER_ID = 'config';
export const GENERATED_KEY_FILE = 'credential-keys';

/**
 * Loads the keyring: OPENWOP_CREDENTIAL_KEYS when set; otherwise, in embedded mode only (no
 * DATABASE_URL), one key generated on first start and kept in `<dataDir>/credential-keys` (mode
 * 0600). With DATABASE_URL and no keys there is no keyring: replicas would each invent a different
 * key, so the host refuses to store credentials (503) instead.
 */
export function loadKeyring(config: Pick<HostConfig, 'credentialKeys' | 'databaseUrl' | 'dataDir'>): { keys: KeyringKey[]; source: 'env' | 'file' | 'none' } {
  if (config.credentialKeys) return { keys: parseKeyring(config.credentialKeys), source: 'env' };
  if (config.databaseUrl) return { keys: [], source: 'none' };
  const file = path.join(config.dataDir, GENERATED_KEY_FILE);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(config.dataDir, { recursive: true });
    const line = `k1:${randomBytes(32).toString('base64')}\n`;
    try {
      // 'wx': never overwrite a key another process wrote first (that would orphan its credentials).
      fs.writeFileSync(file, line, { mode: 0o600, flag: 'wx' });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
  return { keys: parseKeyring(fs.readFileSync(file, 'utf8').trim()), source: 'file' };
}

/** The built-in key provider: AES-256-GCM under the configured (or generated) keyring. */
@Injectable()
@CredentialKeyProvider({ id: CONFIG_KEY_PROVIDER_ID })
export class ConfigCredentialKeyProvider implements CredentialKeyProviderContract {
  private readonly keyring: AesGcmKeyring;
  private readonly logger = new Logger('credentials');

  constructor(@Inject(HOST_CONFIG) config: HostConfig) {
    const { keys, source } = loadKeyring(config);
    this.keyring = new AesGcmKeyring(keys);
    if (source === 'none') this.logger.warn('No OPENWOP_CREDENTIAL_KEYS with DATABASE_URL: connections cannot store credentials until keys are configured.');
    else this.logger.log({ msg: 'credential keyring loaded', keys: keys.length, source: source === 'env' ? 'OPENWOP_CREDENTIAL_KEYS' : 'the data folder', sealingKeyId: keys[0].id });
  }

  isAvailable(): boolean {
    return this.keyring.currentKeyId !== undefined;
  }

  currentKeyId(): string | undefined {
    return this.keyring.currentKeyId;
  }

  async seal(plaintext: Uint8Array, context: CredentialSealingContext): Promise<SealedCredential> {
    return this.keyring.seal(plaintext, context);
  }

  async open(credential: SealedCredential, context: CredentialSealingContext): Promise<Uint8Array> {
    return this.keyring.open(credential, context);
  }
}
