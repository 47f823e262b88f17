import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject, sign, verify } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { AuditCheckpointSigner, AuditCheckpointSignerContract } from '@openwop-host/plugin-sdk';
import { DataSource, EntityManager } from 'typeorm';
import { parseAuditPublicKey, parseAuditSigningKey } from '../config/audit-settings';
import { ConfigError } from '../config/config-error';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { ExtensionFault } from '../errors/internal-fault';
import { collectExtensions, ExtensionMeta } from '../plugins/extension-registry';
import { HostSecretStore } from '../secrets/host-secret.store';

const KEY_SECRET_NAME = 'audit-checkpoint-ed25519';

/** The key that signs checkpoints now, wherever its private half is. */
export interface CheckpointSigner {
  /** Where the key is: `database`, `OPENWOP_AUDIT_SIGNING_KEY(_FILE)` or `plugin:<id>`. */
  source: string;
  publicKey: KeyObject;
  /** The advertised `checkpointPublicKey`: base64 SubjectPublicKeyInfo DER. */
  spki: string;
  /** What a checkpoint records as `key_fingerprint`: the first 32 hex digits of the SHA-256 of the SPKI DER. */
  fingerprint: string;
  /** The Ed25519 signature of `message`. */
  sign(message: Buffer): Promise<Buffer>;
}

export function keyFingerprint(publicKey: KeyObject): string {
  return createHash('sha256').update(publicKey.export({ format: 'der', type: 'spki' })).digest('hex').slice(0, 32);
}

function publicParts(publicKey: KeyObject): Pick<CheckpointSigner, 'publicKey' | 'spki' | 'fingerprint'> {
  return { publicKey, spki: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'), fingerprint: keyFingerprint(publicKey) };
}

function localSigner(source: string, privateKey: KeyObject): CheckpointSigner {
  return { source, ...publicParts(createPublicKey(privateKey)), sign: async (message) => sign(null, message, privateKey) };
}

/**
 * Who signs the audit log's checkpoints, and which keys a checkpoint may be signed with:
 *
 * - a plugin's signer named by OPENWOP_AUDIT_SIGNER (a KMS: the private key never reaches the host);
 * - else the key of OPENWOP_AUDIT_SIGNING_KEY_FILE or OPENWOP_AUDIT_SIGNING_KEY (outside the database);
 * - else one generated once and kept in `host_secret`: zero-config for a laptop, but anyone who holds
 *   the database holds that key and can re-sign a rewritten log, so the host says so at start.
 *
 * A checkpoint verifies only under the current key or a key of OPENWOP_AUDIT_TRUSTED_KEYS (previous
 * keys, after a rotation), looked up by the fingerprint it records.
 */
@Injectable()
export class AuditSigningService implements OnApplicationBootstrap {
  private readonly logger = new Logger('audit');
  private plugin?: { id: string; provider: AuditCheckpointSignerContract };
  private current?: Promise<CheckpointSigner>;
  private warned = false;

  /** `discovery` is absent where the CLI builds the audit log without Nest: no plugin signer there. */
  private readonly secrets: HostSecretStore;

  constructor(
    private readonly ds: DataSource,
    @Optional() @Inject(DiscoveryService) private readonly discovery: DiscoveryService | undefined,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    @Optional() secrets?: HostSecretStore,
  ) {
    // The CLI's commands build this service without a module: the store on the same data source then.
    this.secrets = secrets ?? new HostSecretStore(ds);
  }

  /** Whether checkpoints are signed with the key kept in the database (no key, no signer configured). */
  get inDatabase(): boolean {
    return !this.config.audit.signer && !this.config.audit.signingKey;
  }

  /** Finds the named plugin signer (a missing one stops the start), then reads the key early (non-fatal: it is read again at first use). */
  async onApplicationBootstrap(): Promise<void> {
    if (!this.discovery) return;
    const found = collectExtensions<ExtensionMeta<typeof AuditCheckpointSigner>, AuditCheckpointSignerContract>(this.discovery, {
      name: 'audit checkpoint signer',
      metadataKey: AuditCheckpointSigner.key,
      key: (meta) => meta.id,
      validate: (_meta, p) => (typeof p.sign === 'function' && typeof p.publicKeySpki === 'function' ? undefined : 'needs publicKeySpki() and sign(message)'),
    });
    const wanted = this.config.audit.signer;
    if (wanted) {
      const hit = found.find((c) => c.meta.id === wanted);
      if (!hit) throw new ConfigError(`OPENWOP_AUDIT_SIGNER "${wanted}" is not a registered audit checkpoint signer (${found.map((c) => c.meta.id).join(', ') || 'none is loaded'})`);
      this.plugin = { id: wanted, provider: hit.provider };
    } else if (found.length) {
      this.logger.warn({ msg: 'a plugin contributes an audit checkpoint signer that is not selected: set OPENWOP_AUDIT_SIGNER to use it', signers: found.map((c) => c.meta.id) });
    }
    await this.signer().catch((err) => this.logger.warn({ msg: 'audit checkpoint key not available yet: it is read again at first use', err }));
  }

  /**
   * The current signer. The in-database key is read through `m` inside an append (not a second
   * connection, which a busy pool might not give while this one holds the chain lock); a key this
   * transaction itself wrote is not kept, since the transaction may still roll back.
   */
  signer(m?: EntityManager): Promise<CheckpointSigner> {
    if (this.current) return this.current;
    const audit = this.config.audit;
    if (audit.signer) {
      // The CLI loads no plugin: what it appends is sealed by the host's next pass.
      if (!this.plugin) return Promise.reject(new ConfigError(`OPENWOP_AUDIT_SIGNER "${audit.signer}" signs inside the host only (its plugin is not loaded here)`));
      return this.keep(this.pluginSigner(this.plugin.id, this.plugin.provider));
    }
    if (audit.signingKey) return this.keep(Promise.resolve(localSigner(audit.signingKeySource ?? 'OPENWOP_AUDIT_SIGNING_KEY', parseAuditSigningKey(audit.signingKey, audit.signingKeySource ?? 'OPENWOP_AUDIT_SIGNING_KEY'))));
    const load = this.databaseKey(m);
    const signer = load.then((l) => l.signer);
    void load.then(
      (l) => {
        if (l.committed) this.current ??= signer;
        this.warnDatabaseKey();
      },
      () => undefined,
    );
    return signer;
  }

  /** The keys a checkpoint may be signed with, by fingerprint: the current one and the trusted previous ones. */
  async trustedKeys(): Promise<Map<string, KeyObject>> {
    const current = await this.signer();
    const keys = new Map<string, KeyObject>([[current.fingerprint, current.publicKey]]);
    for (const spki of this.config.audit.trustedKeys) {
      const key = parseAuditPublicKey(spki);
      if (key) keys.set(keyFingerprint(key), key);
    }
    return keys;
  }

  /** Keeps a signer once it resolved; a failed read is tried again at the next use. */
  private keep(signer: Promise<CheckpointSigner>): Promise<CheckpointSigner> {
    this.current = signer;
    signer.catch(() => {
      if (this.current === signer) this.current = undefined;
    });
    return signer;
  }

  private async pluginSigner(id: string, provider: AuditCheckpointSignerContract): Promise<CheckpointSigner> {
    const spki = await provider.publicKeySpki();
    const publicKey = typeof spki === 'string' ? parseAuditPublicKey(spki) : undefined;
    if (!publicKey) throw new ExtensionFault(`audit checkpoint signer "${id}" answered a public key that is not an Ed25519 SPKI (base64 DER)`);
    return {
      source: `plugin:${id}`,
      ...publicParts(publicKey),
      sign: async (message) => {
        const signature = Buffer.from(await provider.sign(new Uint8Array(message)));
        // A signature that does not verify would seal a checkpoint no verifier accepts: refuse it here.
        if (!verify(null, message, publicKey, signature)) throw new ExtensionFault(`audit checkpoint signer "${id}" answered a signature that does not verify under its public key`);
        return signature;
      },
    };
  }

  private async databaseKey(m?: EntityManager): Promise<{ signer: CheckpointSigner; committed: boolean }> {
    // The first replica to need it writes it; every other one reads the same row.
    const key = await this.secrets.getOrCreate(KEY_SECRET_NAME, () => generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }), m);
    return { signer: localSigner('database', createPrivateKey({ key: key.value, format: 'der', type: 'pkcs8' })), committed: !(key.created && m) };
  }

  /** Once per process: a server database is a production setting, where a key in the database is a known weakness. */
  private warnDatabaseKey(): void {
    if (this.warned) return;
    this.warned = true;
    const msg = 'audit checkpoints are signed with the key kept in the database: whoever can write the database can re-sign a rewritten audit log. Set OPENWOP_AUDIT_SIGNING_KEY_FILE (openwop-host audit keygen) or OPENWOP_AUDIT_SIGNER in production (docs/security.md, Audit log)';
    if (this.config.databaseUrl) this.logger.warn({ msg, keySecret: KEY_SECRET_NAME });
    else this.logger.log({ msg, keySecret: KEY_SECRET_NAME });
  }
}
