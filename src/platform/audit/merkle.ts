import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { InvariantViolation } from '../errors/internal-fault';

const sha256Hex = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

/** The hash of an audit entry: lowercase-hex SHA-256 of its RFC 8785 (JCS) text, the value the next entry carries as `prevHash`. */
export function auditEntryHash(entry: unknown): string {
  const text = canonicalize(entry);
  if (text === undefined) throw new InvariantViolation('audit entry cannot be canonicalized');
  return sha256Hex(text);
}

/**
 * The root a checkpoint signs (RFC 0218, auth-profiles.md §"Audit-log integrity" 3): the leaves are
 * the hashes of the entries the checkpoint anchors, in sequence order; a parent is the SHA-256 of
 * the ASCII text `left ‖ right` (both lowercase hex); a last odd node is promoted unchanged.
 */
export function merkleRoot(leaves: readonly string[]): string {
  if (leaves.length === 0) throw new InvariantViolation('a checkpoint anchors at least one entry');
  let level = leaves.slice();
  while (level.length > 1) {
    const next: string[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(i + 1 < level.length ? sha256Hex(level[i] + level[i + 1]) : level[i]);
    level = next;
  }
  return level[0];
}
