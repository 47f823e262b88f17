/**
 * What a privileged insider can do to the audit log behind the append-only triggers, written apart
 * from the host's code (its own RFC 8785 text and RFC 0218 Merkle root), so a test of the host's
 * verification is not checked against the host itself.
 */
import { createHash, KeyObject, sign } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';

export const sha = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

/** RFC 8785 for the values audit entries hold (strings, integers, booleans, null, arrays, objects). */
export function jcs(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(jcs).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o).filter((k) => o[k] !== undefined).sort().map((k) => `${JSON.stringify(k)}:${jcs(o[k])}`).join(',')}}`;
}

/** RFC 0218's root: a parent is the SHA-256 of the text `left ‖ right`, a last odd node is promoted. */
export function merkleRootOf(leaves: string[]): string {
  let level = leaves;
  while (level.length > 1) {
    const next: string[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(level[i + 1] === undefined ? level[i] : sha(level[i] + level[i + 1]));
    level = next;
  }
  return level[0];
}

/** The fingerprint the host records for a key: the first 32 hex digits of the SHA-256 of its SPKI DER. */
export function fingerprintOf(publicKey: KeyObject): string {
  return createHash('sha256').update(publicKey.export({ format: 'der', type: 'spki' })).digest('hex').slice(0, 32);
}

/** Runs `fn` with the append-only triggers of entries and checkpoints off, as a table owner could. */
export async function behindTheTriggers(ds: DataSource, fn: (m: EntityManager) => Promise<void>): Promise<void> {
  await ds.transaction(async (m) => {
    await m.query(`ALTER TABLE "audit_entry" DISABLE TRIGGER "audit_entry_append_only"`);
    await m.query(`ALTER TABLE "audit_checkpoint" DISABLE TRIGGER "audit_checkpoint_append_only"`);
    await fn(m);
    await m.query(`ALTER TABLE "audit_entry" ENABLE TRIGGER "audit_entry_append_only"`);
    await m.query(`ALTER TABLE "audit_checkpoint" ENABLE TRIGGER "audit_checkpoint_append_only"`);
  });
}

/**
 * Tail truncation: deletes the tenant's entries after `keepSeq` and every checkpoint past it, and
 * rewinds the chain head to `keepSeq` (its hash, its last checkpoint), so the shorter chain is
 * consistent in itself.
 */
export async function truncateTail(ds: DataSource, tenant: string, keepSeq: number): Promise<void> {
  await behindTheTriggers(ds, async (m) => {
    await m.query(`DELETE FROM "audit_entry" WHERE "tenant" = $1 AND "seq" > $2`, [tenant, keepSeq]);
    await m.query(`DELETE FROM "audit_checkpoint" WHERE "tenant" = $1 AND "at_seq" > $2`, [tenant, keepSeq]);
    const [{ hash }] = (await m.query(`SELECT "hash" FROM "audit_entry" WHERE "tenant" = $1 AND "seq" = $2`, [tenant, keepSeq])) as Array<{ hash: string }>;
    const [{ last }] = (await m.query(`SELECT coalesce(max("at_seq"), 0) AS "last" FROM "audit_checkpoint" WHERE "tenant" = $1`, [tenant])) as Array<{ last: string }>;
    await m.query(`UPDATE "audit_chain" SET "head_seq" = $2, "head_hash" = $3, "last_checkpoint_seq" = $4 WHERE "tenant" = $1`, [tenant, keepSeq, hash, Number(last)]);
  });
}

/**
 * A consistent rewrite: `edit` changes the entry at `seq`, every entry from there is re-chained
 * (prevHash, hash), the chain head follows, and every checkpoint of the tenant gets the root of its
 * rewritten leaves, signed with `key` and recorded under `fingerprint`. No hash link is left broken:
 * only the signing key can tell.
 */
export async function rewriteAndResign(
  ds: DataSource,
  tenant: string,
  seq: number,
  edit: (entry: Record<string, unknown>) => void,
  key: KeyObject,
  fingerprint: string,
): Promise<void> {
  await behindTheTriggers(ds, async (m) => {
    const rows = (await m.query(`SELECT "seq", "entry" FROM "audit_entry" WHERE "tenant" = $1 ORDER BY "seq"`, [tenant])) as Array<{ seq: string; entry: Record<string, unknown> }>;
    const hashes = new Map<number, string>();
    let prev: string | null = null;
    for (const row of rows) {
      const s = Number(row.seq);
      const entry = row.entry;
      if (s === seq) edit(entry);
      if (s >= seq) entry.prevHash = prev;
      const hash = sha(jcs(entry));
      if (s >= seq) await m.query(`UPDATE "audit_entry" SET "entry" = $3, "prev_hash" = $4, "hash" = $5 WHERE "tenant" = $1 AND "seq" = $2`, [tenant, s, JSON.stringify(entry), entry.prevHash, hash]);
      hashes.set(s, hash);
      prev = hash;
    }
    await m.query(`UPDATE "audit_chain" SET "head_hash" = $2 WHERE "tenant" = $1`, [tenant, prev]);
    const cps = (await m.query(`SELECT "id", "at_seq", "prev_at_seq" FROM "audit_checkpoint" WHERE "tenant" = $1`, [tenant])) as Array<{ id: string; at_seq: string; prev_at_seq: string }>;
    for (const cp of cps) {
      const leaves: string[] = [];
      for (let s = Number(cp.prev_at_seq) + 1; s <= Number(cp.at_seq); s++) leaves.push(hashes.get(s)!);
      const root = merkleRootOf(leaves);
      const signature = sign(null, Buffer.from(root, 'hex'), key).toString('base64');
      await m.query(`UPDATE "audit_checkpoint" SET "merkle_root" = $2, "signature" = $3, "key_fingerprint" = $4 WHERE "id" = $1`, [cp.id, root, signature, fingerprint]);
    }
  });
}
