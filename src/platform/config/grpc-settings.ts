import { createPrivateKey, KeyObject, X509Certificate } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { EnvSetting } from './env-setting';

/**
 * A refused OPENWOP_GRPC_* setting. loadHostConfig turns it into its ConfigError (this file does not
 * import host-config: host-config imports it). The platform declares and reads the gRPC transport's
 * settings, so that HostConfig carries them without the platform importing src/transport/grpc.
 */
export class GrpcSettingError extends Error {}
const ConfigError = GrpcSettingError;

/** How the gRPC listener treats TLS; the same three words discovery advertises as `grpc.tls`. */
export type GrpcTlsMode = 'disabled' | 'optional' | 'required';

export interface GrpcTlsFiles {
  certFile: string;
  keyFile: string;
  /** PEM text, read and checked at start. */
  cert: Buffer;
  key: Buffer;
}

/** The gRPC transport's settings (OPENWOP_GRPC_*). */
export interface GrpcConfig {
  /** Whether the listener starts with `serve`. */
  enabled: boolean;
  /** Why it is on or off, for the start log line. */
  reason: 'port' | 'test-seams' | 'unset' | 'off';
  host: string;
  /** 0: an ephemeral port, chosen when the listener binds (the advertised endpoint carries the real one). */
  port: number;
  tls: GrpcTlsMode;
  tlsFiles?: GrpcTlsFiles;
  /** The endpoint advertised in discovery; unset: derived from the bind address and the bound port. */
  endpoint?: string;
  reflection: boolean;
  /** How long a graceful stop lets unary calls finish before the listener closes their connections. */
  shutdownGraceMs: number;
}

export const GRPC_ENV_SETTINGS: EnvSetting[] = [
  {
    name: 'OPENWOP_GRPC_PORT',
    description:
      'TCP port of the gRPC transport (`openwop.v1.Engine`); `0` picks a free port. Unset: no gRPC listener, except with OPENWOP_TEST_SEAMS=true, where a conformance host opens one on a free port; `off` keeps it closed either way.',
  },
  { name: 'OPENWOP_GRPC_HOST', description: 'Bind address of the gRPC listener (default: HOST).' },
  {
    name: 'OPENWOP_GRPC_TLS',
    description: '`disabled` (cleartext HTTP/2), `optional` (TLS and cleartext clients on the same port) or `required`. Default: `required` when a certificate and key are set, else `disabled`.',
  },
  { name: 'OPENWOP_GRPC_TLS_CERT', description: 'PEM certificate (chain) file of the gRPC listener; needed for `optional` and `required`.' },
  { name: 'OPENWOP_GRPC_TLS_KEY', description: 'PEM private key file matching OPENWOP_GRPC_TLS_CERT.' },
  {
    name: 'OPENWOP_GRPC_ENDPOINT',
    description: 'The `grpc://` or `grpcs://` URI discovery advertises (set it behind a load balancer). Default: the bind address (the machine name for a wildcard one) and the bound port.',
  },
  { name: 'OPENWOP_GRPC_REFLECTION', default: 'false', description: 'Serve gRPC server reflection (`grpc.reflection.v1` and `v1alpha`) for tools such as grpcurl.' },
  { name: 'OPENWOP_GRPC_SHUTDOWN_GRACE_MS', default: '5000', description: 'On shutdown, how long unary gRPC calls in flight may finish (event streams end at once with UNAVAILABLE, to be resumed elsewhere).' },
];

function str(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function readPem(name: string, file: string): Buffer {
  try {
    return fs.readFileSync(path.resolve(file));
  } catch (e) {
    const code = (e as { code?: string }).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a folder' : (e as Error).message;
    throw new ConfigError(`${name}: cannot read ${file}: ${why}`);
  }
}

/** Reads the certificate and key and checks that they are PEM, that the key is private, and that they belong together. */
function loadTlsFiles(certFile: string, keyFile: string): GrpcTlsFiles {
  const cert = readPem('OPENWOP_GRPC_TLS_CERT', certFile);
  const key = readPem('OPENWOP_GRPC_TLS_KEY', keyFile);
  const notPem = (reason: string) => new ConfigError(`OPENWOP_GRPC_TLS_CERT: ${certFile} is not a PEM certificate (${reason})`);
  if (!cert.toString('utf8').includes('-----BEGIN CERTIFICATE-----')) throw notPem('no PEM "BEGIN CERTIFICATE" block');
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (e) {
    throw notPem((e as Error).message);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch (e) {
    throw new ConfigError(`OPENWOP_GRPC_TLS_KEY: ${keyFile} is not a PEM private key (${(e as Error).message})`);
  }
  if (!x509.checkPrivateKey(privateKey)) throw new ConfigError(`OPENWOP_GRPC_TLS_KEY: ${keyFile} is not the private key of the certificate in ${certFile}`);
  const notAfter = new Date(x509.validTo);
  if (Number.isFinite(notAfter.getTime()) && notAfter.getTime() < Date.now()) {
    throw new ConfigError(`OPENWOP_GRPC_TLS_CERT: the certificate in ${certFile} expired on ${notAfter.toISOString()}`);
  }
  return { certFile, keyFile, cert, key };
}

/**
 * Reads and checks the OPENWOP_GRPC_* settings. Every refusal is one ConfigError line naming the
 * variable, so a host with a broken TLS setup never starts half-configured.
 */
export function loadGrpcConfig(env: NodeJS.ProcessEnv, base: { host: string; testSeams: boolean }): GrpcConfig {
  const rawPort = str(env, 'OPENWOP_GRPC_PORT');
  let enabled: boolean;
  let reason: GrpcConfig['reason'];
  let port = 0;
  if (rawPort === undefined) {
    enabled = base.testSeams;
    reason = base.testSeams ? 'test-seams' : 'unset';
  } else if (/^off$/i.test(rawPort)) {
    enabled = false;
    reason = 'off';
  } else {
    if (!/^\d{1,5}$/.test(rawPort) || Number(rawPort) > 65535) throw new ConfigError(`OPENWOP_GRPC_PORT must be a port number (0-65535) or off, got "${rawPort}"`);
    enabled = true;
    reason = 'port';
    port = Number(rawPort);
  }

  const certFile = str(env, 'OPENWOP_GRPC_TLS_CERT');
  const keyFile = str(env, 'OPENWOP_GRPC_TLS_KEY');
  if (!!certFile !== !!keyFile) throw new ConfigError(`OPENWOP_GRPC_TLS_CERT and OPENWOP_GRPC_TLS_KEY go together; only ${certFile ? 'the certificate' : 'the key'} is set`);
  const rawTls = str(env, 'OPENWOP_GRPC_TLS');
  if (rawTls !== undefined && rawTls !== 'disabled' && rawTls !== 'optional' && rawTls !== 'required') {
    throw new ConfigError(`OPENWOP_GRPC_TLS must be disabled, optional or required; got "${rawTls}"`);
  }
  const tls: GrpcTlsMode = rawTls ?? (certFile ? 'required' : 'disabled');
  if (tls !== 'disabled' && !certFile) throw new ConfigError(`OPENWOP_GRPC_TLS=${tls} needs OPENWOP_GRPC_TLS_CERT and OPENWOP_GRPC_TLS_KEY (PEM files)`);
  // Checked whenever they are given, so a wrong path shows up before the day the port is opened.
  const tlsFiles = certFile && keyFile ? loadTlsFiles(certFile, keyFile) : undefined;

  const endpoint = str(env, 'OPENWOP_GRPC_ENDPOINT');
  if (endpoint !== undefined) {
    let u: URL | undefined;
    try {
      u = new URL(endpoint);
    } catch {
      u = undefined;
    }
    if (!u || (u.protocol !== 'grpc:' && u.protocol !== 'grpcs:') || !u.hostname) throw new ConfigError(`OPENWOP_GRPC_ENDPOINT must be a grpc://host:port or grpcs://host:port URI, got "${endpoint}"`);
    if (u.protocol === 'grpc:' && tls === 'required') throw new ConfigError('OPENWOP_GRPC_ENDPOINT is grpc:// (cleartext) but OPENWOP_GRPC_TLS is required; advertise grpcs://');
    if (u.protocol === 'grpcs:' && tls === 'disabled') throw new ConfigError('OPENWOP_GRPC_ENDPOINT is grpcs:// (TLS) but OPENWOP_GRPC_TLS is disabled; advertise grpc://');
  }

  const reflectionRaw = str(env, 'OPENWOP_GRPC_REFLECTION') ?? 'false';
  if (!/^(true|false|1|0|yes|no)$/i.test(reflectionRaw)) throw new ConfigError(`OPENWOP_GRPC_REFLECTION must be true or false, got "${reflectionRaw}"`);
  const graceRaw = str(env, 'OPENWOP_GRPC_SHUTDOWN_GRACE_MS') ?? '5000';
  if (!/^\d{1,7}$/.test(graceRaw) || Number(graceRaw) > 60_000) throw new ConfigError(`OPENWOP_GRPC_SHUTDOWN_GRACE_MS must be a whole number of milliseconds up to 60000, got "${graceRaw}"`);

  return {
    enabled,
    reason,
    host: str(env, 'OPENWOP_GRPC_HOST') ?? base.host,
    port,
    tls,
    tlsFiles,
    endpoint,
    reflection: /^(true|1|yes)$/i.test(reflectionRaw),
    shutdownGraceMs: Number(graceRaw),
  };
}
