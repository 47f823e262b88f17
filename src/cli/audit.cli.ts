import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Writable } from 'node:stream';
import { AuditCliError, AuditPin, defaultPinFile, pinKey, readPins, writePins } from './audit-pins';
import { baseUrl, call, HostClientOptions } from './host-client';

/**
 * `openwop-host audit verify [--from N] [--to N] [--since <checkpoint>|pinned] [--pin-file F]
 * [--sink-file F] [--trusted-key K]... [--json]`: asks a running host to re-walk the caller tenant's
 * audit hash chain (`GET /v1/audit/verify`, `audit:read`), then checks here every signed checkpoint
 * it returns against the public key the host advertises in discovery
 * (`auth.auditLogIntegrity.checkpointPublicKey`) and the keys it is told to trust, so a host that
 * lied about its own verdict is still caught. With `--since`, the last verified checkpoint is
 * remembered (the pin) and must still be there, unchanged, at the next run: a truncated or rewritten
 * log fails. With `--sink-file`, every checkpoint the host exported to that sink must still be on
 * the host. Exit 0 only when everything holds.
 *
 * `openwop-host audit keygen --out FILE`: writes a new Ed25519 checkpoint signing key for
 * OPENWOP_AUDIT_SIGNING_KEY_FILE.
 */

interface Checkpoint {
  checkpoint: string;
  atSequence: number;
  merkleRoot: string;
  signature: string;
}

interface VerifyResult {
  fromSeq: number;
  toSeq: number;
  chainValid: boolean;
  checkpointsValid?: boolean;
  checkpoints: Checkpoint[];
  anomalies: Array<{ atSeq: number; expectedPrevHash: string; actualPrevHash: string }>;
}

export interface AuditVerifyOptions {
  from?: number;
  to?: number;
  json?: boolean;
  /** A checkpoint id to pin (trusted from now on), or `pinned`: the pin kept in the pin file. */
  since?: string;
  pinFile?: string;
  /** A JSON-lines file of exported checkpoints (OPENWOP_AUDIT_EXPORT_FILE, or what a webhook receiver kept). */
  sinkFile?: string;
  /** Further keys (base64 SPKI) whose signatures hold: previous keys after a rotation, or a new one announced by the operator. */
  trustedKeys?: string[];
}

/** Whether `signature` (base64) is the Ed25519 signature of the 32 bytes of `merkleRoot` (hex) under an SPKI key (base64 DER). */
export function checkpointSignatureHolds(publicKeySpkiBase64: string, cp: Pick<Checkpoint, 'merkleRoot' | 'signature'>): boolean {
  try {
    const key = createPublicKey({ key: Buffer.from(publicKeySpkiBase64, 'base64'), format: 'der', type: 'spki' });
    return verify(null, Buffer.from(cp.merkleRoot, 'hex'), key, Buffer.from(cp.signature, 'base64'));
  } catch {
    return false;
  }
}

const sameCheckpoint = (a: Checkpoint, b: Checkpoint) => a.checkpoint === b.checkpoint && a.atSequence === b.atSequence && a.merkleRoot === b.merkleRoot && a.signature === b.signature;

/** The exported checkpoints of `tenant` in a sink file, one per id (a line may repeat: delivery is at least once). */
function readSink(file: string, tenant: string): { records: Checkpoint[]; unreadable: number } {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new AuditCliError(`cannot read the sink file ${file}: ${(e as Error).message}`);
  }
  const byId = new Map<string, Checkpoint>();
  let unreadable = 0;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const r = JSON.parse(line) as Partial<Checkpoint> & { tenant?: string };
      if (typeof r.checkpoint !== 'string' || !Number.isSafeInteger(r.atSequence) || typeof r.merkleRoot !== 'string' || typeof r.signature !== 'string') unreadable++;
      else if (r.tenant === tenant) byId.set(r.checkpoint, r as Checkpoint);
    } catch {
      unreadable++;
    }
  }
  return { records: [...byId.values()].sort((a, b) => a.atSequence - b.atSequence), unreadable };
}

export async function auditVerify(o: HostClientOptions, opts: AuditVerifyOptions): Promise<number> {
  const discovery = await call(o, 'GET', '/.well-known/openwop');
  const integrity = (discovery.auth as { auditLogIntegrity?: { checkpointPublicKey?: string } } | undefined)?.auditLogIntegrity;
  const advertised = integrity?.checkpointPublicKey;
  const tenant = opts.since !== undefined || opts.sinkFile ? String((await call(o, 'GET', '/v1/whoami')).tenant) : undefined;

  // The pin: read it, and widen the range so that it covers it.
  const pinFile = opts.pinFile ?? defaultPinFile();
  const state = opts.since !== undefined ? readPins(pinFile) : undefined;
  const key = tenant !== undefined ? pinKey(baseUrl(o), tenant) : '';
  const pin: AuditPin | undefined = state?.pins[key];
  if (opts.since === 'pinned' && !pin) throw new AuditCliError(`no pinned checkpoint for tenant ${tenant} at ${baseUrl(o)} in ${pinFile}: take the first pin with --since <checkpoint id> (an id audit verify --json lists)`);
  const sinceId = opts.since !== undefined && opts.since !== 'pinned' && opts.since !== pin?.checkpoint ? opts.since : undefined;
  let from = opts.from;
  if (pin) {
    if (opts.to !== undefined && opts.to < pin.atSequence) throw new AuditCliError(`--to ${opts.to} is below the pinned checkpoint at ${pin.atSequence}: the range must cover it`);
    from = Math.min(from ?? pin.atSequence, pin.atSequence);
  }
  // A checkpoint named for the first time is looked for in the whole range asked (the whole chain by default).
  if (sinceId) from = pin ? Math.min(opts.from ?? 0, pin.atSequence) : opts.from;

  const q = new URLSearchParams();
  if (from !== undefined) q.set('fromSeq', String(from));
  if (opts.to !== undefined) q.set('toSeq', String(opts.to));
  if (pin) {
    q.set('pinnedSeq', String(pin.atSequence));
    q.set('pinnedRoot', pin.merkleRoot);
  }
  const result = (await call(o, 'GET', `/v1/audit/verify${q.size ? `?${q}` : ''}`)) as unknown as VerifyResult;

  const trusted = [...new Set([...(advertised ? [advertised] : []), ...(opts.trustedKeys ?? []), ...(pin ? [pin.publicKey] : [])])];
  const holds = (cp: Pick<Checkpoint, 'merkleRoot' | 'signature'>) => trusted.some((k) => checkpointSignatureHolds(k, cp));
  const badSignatures = advertised ? result.checkpoints.filter((cp) => !holds(cp)).map((cp) => cp.atSequence) : [];
  const lines: string[] = [];
  const problems: string[] = [];

  if (pin) {
    const held = result.checkpoints.find((c) => c.atSequence === pin.atSequence);
    if (!held) problems.push(`PINNED CHECKPOINT ${pin.checkpoint} at ${pin.atSequence} is gone from the host: the log was truncated (or rewritten) below the head verified at ${pin.verifiedAt}`);
    else if (!sameCheckpoint(held, pin)) problems.push(`PINNED CHECKPOINT ${pin.checkpoint} at ${pin.atSequence} now differs: the host holds ${held.checkpoint} with root ${held.merkleRoot} there: the log was rewritten`);
    else lines.push(`pinned checkpoint ${pin.checkpoint} at ${pin.atSequence} holds`);
    if (advertised && advertised !== pin.publicKey && !(opts.trustedKeys ?? []).includes(advertised)) {
      problems.push(`the host's checkpoint key changed since the pin (${fingerprint(pin.publicKey)} -> ${fingerprint(advertised)}): after a planned rotation, run again with --trusted-key ${advertised}`);
    }
  }
  if (sinceId) {
    const named = result.checkpoints.find((c) => c.checkpoint === sinceId);
    if (!named) problems.push(`checkpoint ${sinceId} is not among the host's checkpoints ${result.fromSeq}..${result.toSeq}: nothing was pinned`);
    else lines.push(`pinned checkpoint ${named.checkpoint} at ${named.atSequence} holds`);
  }

  let sink: { checked: number; missing: number; notExported: number; unreadable: number } | undefined;
  if (opts.sinkFile && tenant !== undefined) {
    const { records, unreadable } = readSink(opts.sinkFile, tenant);
    const inRange = records.filter((r) => r.atSequence >= result.fromSeq && r.atSequence <= result.toSeq);
    let missing = 0;
    for (const r of inRange) {
      const there = result.checkpoints.find((c) => c.checkpoint === r.checkpoint);
      if (there && sameCheckpoint(there, r)) continue;
      // A line whose signature does not hold was not written by the host: it proves nothing either way.
      if (!holds(r)) {
        o.err.write(`sink line for checkpoint ${r.checkpoint} ignored: its signature does not hold under a trusted key\n`);
        continue;
      }
      missing++;
      problems.push(there ? `checkpoint ${r.checkpoint} at ${r.atSequence} differs between the sink and the host: the log was rewritten` : `checkpoint ${r.checkpoint} at ${r.atSequence} is in the sink but not on the host: the log was truncated or rewritten`);
    }
    const exported = new Set(records.map((r) => r.checkpoint));
    const notExported = result.checkpoints.filter((c) => !exported.has(c.checkpoint)).length;
    sink = { checked: inRange.length, missing, notExported, unreadable };
    lines.push(`sink ${opts.sinkFile}: ${inRange.length - missing} of ${inRange.length} exported checkpoints are on the host${notExported ? `; ${notExported} of the host's are not in the sink (yet)` : ''}${unreadable ? `; ${unreadable} unreadable line(s)` : ''}`);
  }

  const ok = result.chainValid && result.checkpointsValid !== false && !!advertised && badSignatures.length === 0 && problems.length === 0;

  // The pin advances to the newest checkpoint verified, only when everything held.
  let pinned: AuditPin | undefined;
  if (state && ok && advertised) {
    const newest = result.checkpoints.reduce<Checkpoint | undefined>((a, c) => (!a || c.atSequence > a.atSequence ? c : a), undefined);
    if (newest && (!pin || newest.atSequence >= pin.atSequence)) {
      pinned = { checkpoint: newest.checkpoint, atSequence: newest.atSequence, merkleRoot: newest.merkleRoot, signature: newest.signature, publicKey: advertised, verifiedAt: new Date().toISOString() };
      state.pins[key] = pinned;
      writePins(pinFile, state);
      lines.push(`pin advanced to checkpoint ${pinned.checkpoint} at ${pinned.atSequence} (${pinFile})`);
    }
  }

  if (opts.json) {
    o.out.write(`${JSON.stringify({ ...result, signaturesChecked: result.checkpoints.length, badSignatures, publicKeyAdvertised: !!advertised, ...(state ? { pin: pinned ?? pin ?? null, pinFile } : {}), ...(sink ? { sink } : {}), problems, ok }, null, 2)}\n`);
    return ok ? 0 : 1;
  }
  o.out.write(`entries ${result.fromSeq}..${result.toSeq}: chain ${result.chainValid ? 'valid' : 'BROKEN'}, checkpoints ${result.checkpointsValid === false ? 'INVALID' : 'valid'} (${result.checkpoints.length})\n`);
  for (const a of result.anomalies) o.out.write(`  anomaly at ${a.atSeq}: expected ${a.expectedPrevHash}, found ${a.actualPrevHash || '(nothing)'}\n`);
  if (!advertised) o.err.write('the host advertises no auth.auditLogIntegrity.checkpointPublicKey: signatures could not be checked here\n');
  else o.out.write(`signatures checked here against the advertised key${trusted.length > 1 ? ` and ${trusted.length - 1} trusted key(s)` : ''}: ${result.checkpoints.length - badSignatures.length} of ${result.checkpoints.length} hold\n`);
  for (const at of badSignatures) o.out.write(`  checkpoint at ${at}: signature does NOT hold\n`);
  for (const p of problems) o.out.write(`${p}\n`);
  for (const l of lines) o.out.write(`${l}\n`);
  return ok ? 0 : 1;
}

function fingerprint(spki: string): string {
  return createHash('sha256').update(Buffer.from(spki, 'base64')).digest('hex').slice(0, 32);
}

/** Writes a new Ed25519 private key (PKCS#8 PEM, owner-only) and prints its public half and the setting to use it. */
export function auditKeygen(opts: { out: string; force?: boolean }, io: { out: Writable }): number {
  const file = path.resolve(opts.out);
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  try {
    fs.writeFileSync(file, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600, flag: opts.force ? 'w' : 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new AuditCliError(`${file} exists: give --force to replace it (checkpoints signed with the key it holds then verify only while its public key is listed in OPENWOP_AUDIT_TRUSTED_KEYS)`);
    throw new AuditCliError(`cannot write ${file}: ${(e as Error).message}`);
  }
  fs.chmodSync(file, 0o600);
  const spki = publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
  io.out.write(`wrote an Ed25519 audit checkpoint signing key to ${file} (readable by its owner only)\n`);
  io.out.write(`public key (base64 SPKI, advertised as checkpointPublicKey): ${spki}\n`);
  io.out.write(`key fingerprint: ${fingerprint(spki)}\n`);
  io.out.write(`use it on every replica: OPENWOP_AUDIT_SIGNING_KEY_FILE=${file}\n`);
  return 0;
}
