import { KeyObject, verify } from 'node:crypto';
import type { AuditAnomaly, AuditCheckpointView } from './audit-log.service';
import { merkleRoot } from './merkle';

/** One `audit_checkpoint` row as verification reads it. */
export interface CheckpointRow {
  id: string;
  at_seq: string;
  prev_at_seq: string;
  merkle_root: string;
  signature: string;
  key_fingerprint: string;
}

/**
 * Checks the checkpoints of a verified range (ascending) against the recomputed entry hashes and the
 * trusted keys (by the fingerprint each records), and adds one anomaly per checkpoint that fails, at
 * its sequence, unless the chain walk already reported the break that explains it:
 *
 * - a signature that is not by a trusted key, or does not verify (`expectedPrevHash` names the
 *   trusted keys, `actualPrevHash` the key it claims): a re-signed checkpoint;
 * - a checkpoint whose predecessor is not the one it names (a checkpoint deleted or slipped in);
 * - a root that differs from the root of the recomputed leaves, when no chain anomaly sits in its
 *   leaves or at the entry after them (`expectedPrevHash` the recomputed root, `actualPrevHash` the stored one).
 */
export function checkCheckpoints(
  cps: CheckpointRow[],
  hashes: ReadonlyMap<number, string>,
  anomalies: AuditAnomaly[],
  trusted: ReadonlyMap<string, KeyObject>,
): { checkpointsValid: boolean; checkpoints: AuditCheckpointView[] } {
  const chainBreaks = anomalies.map((a) => a.atSeq);
  let checkpointsValid = true;
  let previousAt: number | undefined;
  const checkpoints: AuditCheckpointView[] = [];
  for (const cp of cps) {
    const at = Number(cp.at_seq);
    const from = Number(cp.prev_at_seq);
    const leaves: string[] = [];
    for (let s = from + 1; s <= at; s++) {
      const h = hashes.get(s);
      if (h) leaves.push(h);
    }
    const complete = leaves.length === at - from && leaves.length > 0;
    const recomputed = complete ? merkleRoot(leaves) : undefined;
    const key = trusted.get(cp.key_fingerprint);
    let signed = false;
    try {
      signed = !!key && verify(null, Buffer.from(cp.merkle_root, 'hex'), key, Buffer.from(cp.signature, 'base64'));
    } catch {
      signed = false;
    }
    const linked = previousAt === undefined || previousAt === from;
    const rootHolds = recomputed === cp.merkle_root;
    if (!signed || !linked || !rootHolds) checkpointsValid = false;
    if (!signed) {
      anomalies.push({
        atSeq: at,
        expectedPrevHash: `checkpoint ${cp.id} signed by a trusted key (${[...trusted.keys()].join(', ')})`,
        actualPrevHash: key ? `a signature that does not verify under key ${cp.key_fingerprint}` : `a signature by key ${cp.key_fingerprint}, not a trusted key`,
      });
    } else if (!linked) {
      anomalies.push({ atSeq: from, expectedPrevHash: `the checkpoint at ${from} that checkpoint ${cp.id} follows`, actualPrevHash: previousAt === undefined ? '' : `the checkpoint before it is at ${previousAt}` });
    } else if (!rootHolds && recomputed && !chainBreaks.some((s) => s > from && s <= at + 1)) {
      anomalies.push({ atSeq: at, expectedPrevHash: recomputed, actualPrevHash: cp.merkle_root });
    }
    previousAt = at;
    checkpoints.push({ checkpoint: cp.id, atSequence: at, merkleRoot: cp.merkle_root, signature: cp.signature });
  }
  return { checkpointsValid, checkpoints };
}
