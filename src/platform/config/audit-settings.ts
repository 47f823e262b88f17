import * as fs from 'node:fs';
import { envInt } from './env-int';
import * as path from 'node:path';
import { createPrivateKey, createPublicKey, KeyObject } from 'node:crypto';
import { checkWebhookUrl, PortRange } from '../http/egress-guard';
import { ConfigError } from './config-error';
import type { EnvSetting } from './env-setting';

/** The tamper-evident audit log's settings (src/platform/audit; docs/security.md §"Audit log"). */
export interface AuditConfig {
  /** A signed checkpoint every this many entries of a tenant's chain (and at its first entry). */
  checkpointIntervalEntries: number;
  /** Newest entries no checkpoint covers are sealed by one within about this many seconds. */
  checkpointIntervalSeconds: number;
  /** The Ed25519 checkpoint signing key (PKCS#8, PEM or base64 DER), from OPENWOP_AUDIT_SIGNING_KEY or the file OPENWOP_AUDIT_SIGNING_KEY_FILE. */
  signingKey?: string;
  /** Where `signingKey` came from, for messages. */
  signingKeySource?: 'OPENWOP_AUDIT_SIGNING_KEY' | 'OPENWOP_AUDIT_SIGNING_KEY_FILE';
  /** The id of a plugin's audit checkpoint signer (a KMS) that signs instead of a local key. */
  signer?: string;
  /** Public keys (base64 SPKI) of previous signing keys whose checkpoints still verify. */
  trustedKeys: string[];
  /** Every sealed checkpoint is appended to this file as one JSON line. */
  exportFile?: string;
  /** Every sealed checkpoint is POSTed to this URL. */
  exportWebhookUrl?: string;
}

export const AUDIT_ENV_SETTINGS: EnvSetting[] = [
  { name: 'OPENWOP_AUDIT_CHECKPOINT_INTERVAL', default: '1000', description: 'The audit log signs a checkpoint at the first entry of a tenant\'s chain and then every this many entries (advertised as `auth.auditLogIntegrity.checkpointIntervalEntries`).' },
  { name: 'OPENWOP_AUDIT_CHECKPOINT_SECONDS', default: '300', description: 'Entries no checkpoint covers yet are sealed by a checkpoint within about this many seconds (one replica does it, on the scheduler; advertised as `auth.auditLogIntegrity.checkpointIntervalSeconds`).' },
  { name: 'OPENWOP_AUDIT_SIGNING_KEY_FILE', description: 'File holding the Ed25519 private key that signs audit checkpoints (PKCS#8 PEM, as `openwop-host audit keygen` writes it): the production setting, a key kept outside the database. Read and checked at start; every replica needs the same key.' },
  { name: 'OPENWOP_AUDIT_SIGNING_KEY', description: 'The same key inline (PKCS#8, PEM or base64 DER), for secret stores that hand keys over as environment variables. At most one of the two. Neither, and no signer: a key is generated once and kept in the database (table `host_secret`), for a laptop only.' },
  { name: 'OPENWOP_AUDIT_SIGNER', description: 'Id of a plugin\'s audit checkpoint signer (a KMS; plugin SDK `@AuditCheckpointSigner`) that signs checkpoints instead of a local key. The host does not start when no loaded plugin contributes it, or when a key is set as well.' },
  { name: 'OPENWOP_AUDIT_TRUSTED_KEYS', description: 'Public keys (base64 SPKI, comma-separated) of previous checkpoint signing keys: the checkpoints they signed still verify after a rotation. Checkpoints under any other key are reported.' },
  { name: 'OPENWOP_AUDIT_EXPORT_FILE', description: 'Every sealed audit checkpoint is appended to this file as one JSON line (by a background worker, retried until it succeeds): an outside copy of the chain\'s heads in which a truncation shows. Use a path outside the database\'s reach; with several replicas, a shared one.' },
  { name: 'OPENWOP_AUDIT_EXPORT_WEBHOOK_URL', description: 'Every sealed audit checkpoint is POSTed to this URL as JSON (https, through the webhook egress guard: OPENWOP_WEBHOOK_ALLOWED_PORTS holds, OPENWOP_WEBHOOK_ALLOW_PRIVATE admits local receivers), retried with backoff until the receiver answers 2xx.' },
];

function str(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name]?.trim();
  return v ? v : undefined;
}

/** An Ed25519 private key, PEM or base64 PKCS#8 DER (or DER bytes, from a file); anything else stops the host at start. */
export function parseAuditSigningKey(v: string | Buffer, setting: string): KeyObject {
  const refused = (reason: string) => new ConfigError(`${setting} must be an Ed25519 private key (PKCS#8, PEM or base64 DER): ${reason}`);
  let key: KeyObject;
  try {
    if (Buffer.isBuffer(v)) key = v.includes('-----BEGIN') ? createPrivateKey(v.toString('utf8')) : createPrivateKey({ key: v, format: 'der', type: 'pkcs8' });
    else key = v.startsWith('-----BEGIN') ? createPrivateKey(v) : createPrivateKey({ key: Buffer.from(v, 'base64'), format: 'der', type: 'pkcs8' });
  } catch (e) {
    throw refused((e as Error).message);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw refused(`a ${key.asymmetricKeyType} key`);
  return key;
}

/** An Ed25519 public key as discovery advertises one: base64 SubjectPublicKeyInfo DER. */
export function parseAuditPublicKey(spki: string): KeyObject | undefined {
  try {
    const key = createPublicKey({ key: Buffer.from(spki, 'base64'), format: 'der', type: 'spki' });
    return key.asymmetricKeyType === 'ed25519' ? key : undefined;
  } catch {
    return undefined;
  }
}

function signingKey(env: NodeJS.ProcessEnv): Pick<AuditConfig, 'signingKey' | 'signingKeySource'> {
  const inline = str(env, 'OPENWOP_AUDIT_SIGNING_KEY');
  const file = str(env, 'OPENWOP_AUDIT_SIGNING_KEY_FILE');
  if (inline && file) throw new ConfigError('Set one of OPENWOP_AUDIT_SIGNING_KEY and OPENWOP_AUDIT_SIGNING_KEY_FILE, not both');
  if (inline) {
    parseAuditSigningKey(inline, 'OPENWOP_AUDIT_SIGNING_KEY');
    return { signingKey: inline, signingKeySource: 'OPENWOP_AUDIT_SIGNING_KEY' };
  }
  if (!file) return {};
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch (e) {
    throw new ConfigError(`OPENWOP_AUDIT_SIGNING_KEY_FILE: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const key = parseAuditSigningKey(bytes, `OPENWOP_AUDIT_SIGNING_KEY_FILE (${file})`);
  return { signingKey: key.export({ format: 'der', type: 'pkcs8' }).toString('base64'), signingKeySource: 'OPENWOP_AUDIT_SIGNING_KEY_FILE' };
}

function trustedKeys(env: NodeJS.ProcessEnv): string[] {
  const raw = str(env, 'OPENWOP_AUDIT_TRUSTED_KEYS');
  if (!raw) return [];
  const keys = raw.split(',').map((k) => k.trim()).filter(Boolean);
  keys.forEach((k, i) => {
    if (!parseAuditPublicKey(k)) throw new ConfigError(`OPENWOP_AUDIT_TRUSTED_KEYS: entry ${i + 1} is not an Ed25519 public key (base64 SPKI DER, as discovery advertises checkpointPublicKey)`);
  });
  return keys;
}

function exportFile(env: NodeJS.ProcessEnv): string | undefined {
  const file = str(env, 'OPENWOP_AUDIT_EXPORT_FILE');
  if (!file) return undefined;
  const abs = path.resolve(file);
  const dir = path.dirname(abs);
  try {
    fs.accessSync(dir, fs.constants.W_OK);
  } catch {
    throw new ConfigError(`OPENWOP_AUDIT_EXPORT_FILE: the folder ${dir} does not exist or is not writable`);
  }
  if (fs.existsSync(abs) && !fs.statSync(abs).isFile()) throw new ConfigError(`OPENWOP_AUDIT_EXPORT_FILE: ${abs} is not a file`);
  return abs;
}

function exportWebhookUrl(env: NodeJS.ProcessEnv, egress: { allowPrivate: boolean; allowedPorts: readonly PortRange[] }): string | undefined {
  const url = str(env, 'OPENWOP_AUDIT_EXPORT_WEBHOOK_URL');
  if (!url) return undefined;
  const checked = checkWebhookUrl(url, egress);
  if (!checked.ok) throw new ConfigError(`OPENWOP_AUDIT_EXPORT_WEBHOOK_URL is refused: ${checked.reason}`);
  return checked.url.toString();
}

/** Reads and checks the audit settings; `egress` is the webhooks' (OPENWOP_WEBHOOK_ALLOW_PRIVATE, OPENWOP_WEBHOOK_ALLOWED_PORTS). */
export function loadAuditSettings(env: NodeJS.ProcessEnv, egress: { allowPrivate: boolean; allowedPorts: readonly PortRange[] }): AuditConfig {
  const key = signingKey(env);
  const signer = str(env, 'OPENWOP_AUDIT_SIGNER');
  if (signer && key.signingKeySource) throw new ConfigError(`OPENWOP_AUDIT_SIGNER names a signer and ${key.signingKeySource} a key: set one of them`);
  return {
    checkpointIntervalEntries: envInt(env, 'OPENWOP_AUDIT_CHECKPOINT_INTERVAL', 1000, 1, 1_000_000),
    checkpointIntervalSeconds: envInt(env, 'OPENWOP_AUDIT_CHECKPOINT_SECONDS', 300, 5, 86_400),
    ...key,
    ...(signer ? { signer } : {}),
    trustedKeys: trustedKeys(env),
    exportFile: exportFile(env),
    exportWebhookUrl: exportWebhookUrl(env, egress),
  };
}

/** The names of the sinks checkpoints are exported to (`audit_checkpoint_export.sink`). */
export function auditExportSinks(config: AuditConfig): Array<'file' | 'webhook'> {
  return [...(config.exportFile ? (['file'] as const) : []), ...(config.exportWebhookUrl ? (['webhook'] as const) : [])];
}
