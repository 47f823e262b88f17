import { createPublicKey, verify } from 'node:crypto';
import { call, HostClientOptions } from './host-client';

/**
 * `openwop-host audit verify [--from N] [--to N] [--json]`: asks a running host to re-walk the
 * caller tenant's audit hash chain (`GET /v1/audit/verify`, `audit:read`), then checks every signed
 * checkpoint it returns against the public key the host advertises in discovery
 * (`auth.auditLogIntegrity.checkpointPublicKey`), so a host that lied about its own verdict is
 * still caught. Exit 0 only when the chain, the host's checkpoint check and every signature hold.
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

/** Whether `signature` (base64) is the Ed25519 signature of the 32 bytes of `merkleRoot` (hex) under an SPKI key (base64 DER). */
export function checkpointSignatureHolds(publicKeySpkiBase64: string, cp: Pick<Checkpoint, 'merkleRoot' | 'signature'>): boolean {
  try {
    const key = createPublicKey({ key: Buffer.from(publicKeySpkiBase64, 'base64'), format: 'der', type: 'spki' });
    return verify(null, Buffer.from(cp.merkleRoot, 'hex'), key, Buffer.from(cp.signature, 'base64'));
  } catch {
    return false;
  }
}

export async function auditVerify(o: HostClientOptions, opts: { from?: number; to?: number; json?: boolean }): Promise<number> {
  const q = new URLSearchParams();
  if (opts.from !== undefined) q.set('fromSeq', String(opts.from));
  if (opts.to !== undefined) q.set('toSeq', String(opts.to));
  const result = (await call(o, 'GET', `/v1/audit/verify${q.size ? `?${q}` : ''}`)) as unknown as VerifyResult;
  const discovery = await call(o, 'GET', '/.well-known/openwop');
  const integrity = (discovery.auth as { auditLogIntegrity?: { checkpointPublicKey?: string } } | undefined)?.auditLogIntegrity;
  const publicKey = integrity?.checkpointPublicKey;
  const badSignatures = publicKey ? result.checkpoints.filter((cp) => !checkpointSignatureHolds(publicKey, cp)).map((cp) => cp.atSequence) : [];
  const ok = result.chainValid && result.checkpointsValid !== false && !!publicKey && badSignatures.length === 0;
  if (opts.json) {
    o.out.write(`${JSON.stringify({ ...result, signaturesChecked: result.checkpoints.length, badSignatures, publicKeyAdvertised: !!publicKey, ok }, null, 2)}\n`);
    return ok ? 0 : 1;
  }
  o.out.write(`entries ${result.fromSeq}..${result.toSeq}: chain ${result.chainValid ? 'valid' : 'BROKEN'}, checkpoints ${result.checkpointsValid === false ? 'INVALID' : 'valid'} (${result.checkpoints.length})\n`);
  for (const a of result.anomalies) o.out.write(`  anomaly at ${a.atSeq}: expected previous hash ${a.expectedPrevHash}, found ${a.actualPrevHash}\n`);
  if (!publicKey) o.err.write('the host advertises no auth.auditLogIntegrity.checkpointPublicKey: signatures could not be checked here\n');
  else o.out.write(`signatures checked here against the advertised key: ${result.checkpoints.length - badSignatures.length} of ${result.checkpoints.length} hold\n`);
  for (const at of badSignatures) o.out.write(`  checkpoint at ${at}: signature does NOT hold\n`);
  return ok ? 0 : 1;
}
