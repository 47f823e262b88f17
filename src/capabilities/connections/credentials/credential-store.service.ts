import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { CredentialKeyProvider, CredentialKeyProviderContract } from '@openwop-host/plugin-sdk';
import { collectExtensions, ExtensionMeta } from '../../../platform/plugins/extension-registry';
import { DataSource, EntityManager } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import { DomainError, NotFoundError } from '../../../platform/errors/domain-error';
import { CredentialEntity } from './credential.entity';
import { CONFIG_KEY_PROVIDER_ID } from './config-key-provider';
import { connectionsSettings } from '../connections.settings';
import { ConfigError } from '../../../platform/config/config-error';

export class CredentialStoreUnavailableError extends DomainError {
  constructor() {
    super(
      'credential_store_unavailable',
      503,
      'The host has no credential encryption key: set OPENWOP_CREDENTIAL_KEYS (or configure a key provider) to store credentials.',
    );
  }
}

/** Upper bound of one credential value (an API key, a token, a service-account JSON). */
export const MAX_CREDENTIAL_BYTES = 16 * 1024;

/**
 * The credential store: the only code that sees credential plaintext. Values are sealed by the
 * selected key provider (AES-256-GCM by default) bound to tenant and credential id, and stored with
 * the provider and key id so keys can rotate. Nothing here returns plaintext to a caller outside
 * this capability except `open`, used only at the point of egress.
 */
@Injectable()
export class CredentialStoreService implements OnApplicationBootstrap {
  private readonly providers = new Map<string, CredentialKeyProviderContract>();
  private selected?: CredentialKeyProviderContract;
  private selectedId = CONFIG_KEY_PROVIDER_ID;
  private readonly logger = new Logger('credentials');

  constructor(
    private readonly ds: DataSource,
    private readonly discovery: DiscoveryService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  onApplicationBootstrap(): void {
    const found = collectExtensions<ExtensionMeta<typeof CredentialKeyProvider>, CredentialKeyProviderContract>(this.discovery, { name: 'credential key provider', metadataKey: CredentialKeyProvider.key, key: (meta) => meta.id });
    for (const { meta, provider } of found) this.providers.set(meta.id, provider);
    const wanted = connectionsSettings(this.config).keyProvider;
    const provider = this.providers.get(wanted);
    // A misconfigured key provider must stop the start, not silently fall back to another key.
    if (!provider) throw new ConfigError(`connections.keyProvider "${wanted}" is not a registered credential key provider (${[...this.providers.keys()].join(', ')})`);
    this.selected = provider;
    this.selectedId = wanted;
  }

  /** Whether credentials can be stored now (a key is configured). */
  available(): boolean {
    return !!this.selected?.isAvailable();
  }

  private sealer(): CredentialKeyProviderContract {
    if (!this.selected || !this.selected.isAvailable()) throw new CredentialStoreUnavailableError();
    return this.selected;
  }

  /** Seals and stores a new credential; returns its id. Joins the caller's transaction. */
  async store(tenant: string, plaintext: string, manager: EntityManager): Promise<string> {
    const id = randomUUID();
    const sealed = await this.sealer().seal(Buffer.from(plaintext, 'utf8'), { tenant, credentialId: id });
    await manager.getRepository(CredentialEntity).insert({ id, tenant, keyProvider: this.selectedId, keyId: sealed.keyId, sealed: Buffer.from(sealed.sealed) });
    return id;
  }

  /** Replaces the value of an existing credential (rotation): same id, new ciphertext under the current key. */
  async replace(tenant: string, id: string, plaintext: string, manager: EntityManager): Promise<void> {
    const sealed = await this.sealer().seal(Buffer.from(plaintext, 'utf8'), { tenant, credentialId: id });
    const res = await manager
      .getRepository(CredentialEntity)
      .update({ tenant, id }, { keyProvider: this.selectedId, keyId: sealed.keyId, sealed: Buffer.from(sealed.sealed) });
    if (!res.affected) throw new NotFoundError('No such credential.');
  }

  async delete(tenant: string, id: string, manager: EntityManager): Promise<void> {
    await manager.getRepository(CredentialEntity).delete({ tenant, id });
  }

  /**
   * The plaintext of a credential, for the one place that sends it to the provider (after the egress
   * check). Never put the result in a response, event, log line or error.
   */
  async open(tenant: string, id: string, manager?: EntityManager): Promise<string> {
    const row = await (manager ?? this.ds.manager).getRepository(CredentialEntity).findOne({ where: { tenant, id } });
    if (!row) throw new NotFoundError('No such credential.');
    const provider = this.providers.get(row.keyProvider);
    if (!provider) throw new DomainError('credential_store_unavailable', 503, `The key provider that sealed this credential ("${row.keyProvider}") is not available.`);
    const plain = await provider.open({ keyId: row.keyId, sealed: row.sealed }, { tenant, credentialId: id });
    return Buffer.from(plain).toString('utf8');
  }

  /**
   * Re-seals up to `limit` credentials that are not under the current key (after a key rotation),
   * claiming rows with SKIP LOCKED so replicas share the work. Returns how many were re-sealed.
   */
  async resealStale(limit = 100): Promise<number> {
    if (!this.available()) return 0;
    const sealer = this.sealer();
    const current = sealer.currentKeyId() ?? '';
    return this.ds.transaction(async (m) => {
      const rows = await m
        .getRepository(CredentialEntity)
        .createQueryBuilder('c')
        .where('NOT (c.key_provider = :p AND c.key_id = :k)', { p: this.selectedId, k: current })
        .setLock('pessimistic_write')
        .setOnLocked('skip_locked')
        .orderBy('c.created_at', 'ASC')
        .limit(limit)
        .getMany();
      let done = 0;
      for (const row of rows) {
        const opener = this.providers.get(row.keyProvider);
        if (!opener) continue;
        const ctx = { tenant: row.tenant, credentialId: row.id };
        try {
          const plain = await opener.open({ keyId: row.keyId, sealed: row.sealed }, ctx);
          const sealed = await sealer.seal(plain, ctx);
          await m.getRepository(CredentialEntity).update({ tenant: row.tenant, id: row.id }, { keyProvider: this.selectedId, keyId: sealed.keyId, sealed: Buffer.from(sealed.sealed) });
          done++;
        } catch (e) {
          // The old key is gone: the credential stays as it is (and fails on use) until rotated by an admin.
          this.logger.warn({ msg: 'credential could not be re-sealed', credentialId: row.id, err: (e as Error).message });
        }
      }
      return done;
    });
  }
}
