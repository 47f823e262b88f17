import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject, randomUUID, sign, verify } from 'node:crypto';
import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { ValidationError } from '../errors/domain-error';
import type { Principal } from '../identity/principal';
import { auditEntryHash, merkleRoot } from './merkle';
import { InvariantViolation } from '../errors/internal-fault';

/** The security-relevant actions the host records (docs/security.md §"Audit log"). */
export type AuditAction =
  | 'key.created'
  | 'key.revoked'
  | 'approval.decided'
  | 'proposal.applied'
  | 'import.applied'
  | 'webhook.registered'
  | 'webhook.unregistered'
  | 'run.created'
  | 'run.cancel-requested';

/** A detail value: identifiers, names, counts and flags only, never a secret or a payload. */
export type AuditDetail = string | number | boolean | null | readonly string[];

export interface AuditRecord {
  tenant: string;
  workspace?: string;
  actor: { principal: string; kind: string; keyId?: string };
  action: AuditAction;
  resource: { type: string; id: string };
  details?: Record<string, AuditDetail | undefined>;
}

/** The hashed object of one entry: exactly what `audit_entry.entry` holds. */
export interface AuditEntry {
  seq: number;
  tenant: string;
  workspace?: string;
  ts: string;
  action: AuditAction;
  actor: AuditRecord['actor'];
  resource: AuditRecord['resource'];
  details: Record<string, AuditDetail>;
  prevHash: string | null;
}

export interface AuditCheckpointView {
  checkpoint: string;
  atSequence: number;
  merkleRoot: string;
  signature: string;
}

export interface AuditAnomaly {
  atSeq: number;
  expectedPrevHash: string;
  actualPrevHash: string;
}

/** audit-verify-result.schema.json (closed). */
export interface AuditVerifyResult {
  fromSeq: number;
  toSeq: number;
  chainValid: boolean;
  checkpointsValid: boolean;
  checkpoints: AuditCheckpointView[];
  anomalies: AuditAnomaly[];
}

const KEY_SECRET_NAME = 'audit-checkpoint-ed25519';
/** Detail names that could carry a credential are refused outright: a programming error, never stored. */
const SECRET_NAME = /secret|token|password|passphrase|credential|authorization|apikey|api_key|private/i;
/** The most entries one verify call re-walks. */
export const MAX_VERIFY_ENTRIES = 100_000;
const BATCH = 1000;

/** The principal's part an entry records: who acted, never what they presented. */
export function auditActor(p: Principal): AuditRecord['actor'] {
  return { principal: p.principal, kind: p.kind, ...(p.keyId ? { keyId: p.keyId } : {}) };
}

interface SigningKeys {
  privateKey: KeyObject;
  publicKey: KeyObject;
  spki: string;
  fingerprint: string;
}

function keysOf(privateKey: KeyObject): SigningKeys {
  const publicKey = createPublicKey(privateKey);
  const der = publicKey.export({ format: 'der', type: 'spki' });
  return { privateKey, publicKey, spki: der.toString('base64'), fingerprint: createHash('sha256').update(der).digest('hex').slice(0, 32) };
}

function rowsOf<T>(result: unknown): T[] {
  // INSERT ... RETURNING answers rows; UPDATE ... RETURNING answers [rows, count].
  return (Array.isArray(result) && Array.isArray(result[0]) ? result[0] : result) as T[];
}

/**
 * The tamper-evident audit log (auth-profiles.md §"Audit-log integrity"): one hash chain per tenant,
 * each entry carrying `prevHash`, the SHA-256 of the previous entry's JCS text (null for the first).
 * An entry is appended in the transaction of the action it records, after the action's own writes:
 * the upsert of the tenant's `audit_chain` row takes its row lock, which orders every append of the
 * tenant on every replica until that transaction ends (so the chain never forks, and an action that
 * rolls back leaves no entry). The first entry and every `checkpointIntervalEntries`-th after the
 * last checkpoint mint a checkpoint in the same transaction: an Ed25519 signature over the Merkle
 * root of the entries since the previous checkpoint.
 */
@Injectable()
export class AuditLogService implements OnApplicationBootstrap {
  private keys?: Promise<SigningKeys>;

  constructor(
    private readonly ds: DataSource,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  get checkpointIntervalEntries(): number {
    return this.config.audit.checkpointIntervalEntries;
  }

  get checkpointIntervalSeconds(): number {
    return this.config.audit.checkpointIntervalSeconds;
  }

  /** Reads the signing key early (non-fatal: a host starts while its database is away; it is read again at first use). */
  async onApplicationBootstrap(): Promise<void> {
    await this.signingKeys().catch(() => undefined);
  }

  /**
   * The signing key: OPENWOP_AUDIT_SIGNING_KEY, else one generated once and kept in `host_secret`.
   * Inside an append it is read through the appender's transaction (not a second connection, which a
   * busy pool might not give while this one holds the chain lock); a key this transaction itself
   * wrote is not cached, since the transaction may still roll back.
   */
  private signingKeys(m?: EntityManager): Promise<SigningKeys> {
    if (this.keys) return this.keys;
    const configured = this.config.audit.signingKey;
    if (configured) {
      const key = configured.startsWith('-----BEGIN') ? createPrivateKey(configured) : createPrivateKey({ key: Buffer.from(configured, 'base64'), format: 'der', type: 'pkcs8' });
      return (this.keys = Promise.resolve(keysOf(key)));
    }
    const db = m ?? this.ds;
    const load = (async (): Promise<{ keys: SigningKeys; committed: boolean }> => {
      const read = async () => ((await db.query(`SELECT "value" FROM "host_secret" WHERE "name" = $1`, [KEY_SECRET_NAME])) as Array<{ value: Buffer | Uint8Array }>)[0];
      let row = await read();
      let committed = true;
      if (!row) {
        // The first replica to need it writes it; every other one reads the same row.
        const fresh = generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' });
        await db.query(`INSERT INTO "host_secret" ("name", "value") VALUES ($1, $2) ON CONFLICT ("name") DO NOTHING`, [KEY_SECRET_NAME, fresh]);
        row = await read();
        committed = !m;
      }
      return { keys: keysOf(createPrivateKey({ key: Buffer.from(row.value), format: 'der', type: 'pkcs8' })), committed };
    })();
    const keys = load.then((l) => l.keys);
    void load.then(
      (l) => {
        if (l.committed) this.keys ??= keys;
      },
      () => undefined,
    );
    return keys;
  }

  /** The advertised `checkpointPublicKey`: base64 SubjectPublicKeyInfo DER. */
  async publicKeySpki(): Promise<string> {
    return (await this.signingKeys()).spki;
  }

  /**
   * Appends one entry inside the caller's transaction. Call it after the action's own writes, as the
   * transaction's last statement where possible: the chain row stays locked until the commit.
   */
  async record(m: EntityManager, rec: AuditRecord): Promise<void> {
    const keys = await this.signingKeys(m);
    const details: Record<string, AuditDetail> = {};
    for (const [k, v] of Object.entries(rec.details ?? {})) {
      if (v === undefined) continue;
      if (SECRET_NAME.test(k)) throw new InvariantViolation(`audit detail "${k}" looks like a secret: audit entries never carry one`);
      details[k] = v;
    }
    const [head] = rowsOf<{ head_seq: string; head_hash: string | null; last_checkpoint_seq: string }>(
      await m.query(
        `INSERT INTO "audit_chain" ("tenant", "head_seq") VALUES ($1, 1)
         ON CONFLICT ("tenant") DO UPDATE SET "head_seq" = "audit_chain"."head_seq" + 1
         RETURNING "head_seq", "head_hash", "last_checkpoint_seq"`,
        [rec.tenant],
      ),
    );
    const seq = Number(head.head_seq);
    const entry: AuditEntry = {
      seq,
      tenant: rec.tenant,
      ...(rec.workspace ? { workspace: rec.workspace } : {}),
      ts: new Date().toISOString(),
      action: rec.action,
      actor: rec.actor,
      resource: rec.resource,
      details,
      prevHash: seq === 1 ? null : head.head_hash,
    };
    const hash = auditEntryHash(entry);
    await m.query(`INSERT INTO "audit_entry" ("tenant", "seq", "action", "entry", "prev_hash", "hash") VALUES ($1, $2, $3, $4, $5, $6)`, [
      rec.tenant, seq, rec.action, JSON.stringify(entry), entry.prevHash, hash,
    ]);
    const lastCheckpoint = Number(head.last_checkpoint_seq);
    const checkpoint = seq === 1 || seq - lastCheckpoint >= this.config.audit.checkpointIntervalEntries;
    if (checkpoint) await this.mintCheckpoint(m, keys, rec.tenant, lastCheckpoint, seq);
    await m.query(`UPDATE "audit_chain" SET "head_hash" = $2${checkpoint ? `, "last_checkpoint_seq" = "head_seq"` : ''} WHERE "tenant" = $1`, [rec.tenant, hash]);
  }

  /** Signs the entries (after, atSeq] of a tenant; the caller holds the tenant's chain row lock. */
  private async mintCheckpoint(m: EntityManager, keys: SigningKeys, tenant: string, after: number, atSeq: number): Promise<void> {
    const leaves = (await m.query(`SELECT "hash" FROM "audit_entry" WHERE "tenant" = $1 AND "seq" > $2 AND "seq" <= $3 ORDER BY "seq"`, [tenant, after, atSeq])) as Array<{ hash: string }>;
    const root = merkleRoot(leaves.map((l) => l.hash));
    const signature = sign(null, Buffer.from(root, 'hex'), keys.privateKey).toString('base64');
    await m.query(
      `INSERT INTO "audit_checkpoint" ("id", "tenant", "at_seq", "prev_at_seq", "merkle_root", "signature", "key_fingerprint") VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [`ckpt_${randomUUID()}`, tenant, atSeq, after, root, signature, keys.fingerprint],
    );
  }

  /**
   * Seals every chain whose newest entries no checkpoint covers yet (the time-based cadence,
   * `checkpointIntervalSeconds`): one checkpoint per such tenant at its head. Chains an appender
   * holds right now are skipped (SKIP LOCKED): that appender, or the next pass, seals them.
   * Returns how many checkpoints it minted.
   */
  async sealPending(signal?: AbortSignal): Promise<number> {
    const keys = await this.signingKeys();
    let sealed = 0;
    for (let pass = 0; pass < 100 && !signal?.aborted; pass++) {
      const n = await this.ds.transaction(async (m) => {
        const heads = (await m.query(
          `SELECT "tenant", "head_seq", "last_checkpoint_seq" FROM "audit_chain" WHERE "head_seq" > "last_checkpoint_seq" ORDER BY "tenant" LIMIT 100 FOR UPDATE SKIP LOCKED`,
        )) as Array<{ tenant: string; head_seq: string; last_checkpoint_seq: string }>;
        for (const h of heads) {
          await this.mintCheckpoint(m, keys, h.tenant, Number(h.last_checkpoint_seq), Number(h.head_seq));
          await m.query(`UPDATE "audit_chain" SET "last_checkpoint_seq" = "head_seq" WHERE "tenant" = $1`, [h.tenant]);
        }
        return heads.length;
      });
      sealed += n;
      if (n < 100) break;
    }
    return sealed;
  }

  /**
   * Re-walks the tenant's entries [fromSeq, toSeq]: every `prevHash` against the recomputed hash of
   * the entry before it, the chain head against the recomputed hash of the last entry, and every
   * checkpoint in the range (Merkle root over the recomputed hashes it anchors, and its signature).
   */
  async verify(tenant: string, fromSeq: number, toSeq: number): Promise<AuditVerifyResult> {
    const keys = await this.signingKeys();
    const [chain] = (await this.ds.query(`SELECT "head_seq", "head_hash" FROM "audit_chain" WHERE "tenant" = $1`, [tenant])) as Array<{ head_seq: string; head_hash: string | null }>;
    const headSeq = chain ? Number(chain.head_seq) : 0;
    const cps = (await this.ds.query(
      `SELECT "id", "at_seq", "prev_at_seq", "merkle_root", "signature", "key_fingerprint" FROM "audit_checkpoint" WHERE "tenant" = $1 AND "at_seq" >= $2 AND "at_seq" <= $3 ORDER BY "at_seq"`,
      [tenant, fromSeq, toSeq],
    )) as Array<{ id: string; at_seq: string; prev_at_seq: string; merkle_root: string; signature: string; key_fingerprint: string }>;
    // The walk starts one entry early (to check fromSeq's link) or where the first checkpoint's leaves start.
    let lo = Math.max(1, fromSeq - 1);
    if (cps.length) lo = Math.min(lo, Number(cps[0].prev_at_seq) + 1);
    const hi = Math.min(toSeq, headSeq);
    const [{ n }] = (await this.ds.query(`SELECT count(*)::int AS n FROM "audit_entry" WHERE "tenant" = $1 AND "seq" >= $2 AND "seq" <= $3`, [tenant, lo, hi])) as Array<{ n: number }>;
    if (n > MAX_VERIFY_ENTRIES) throw new ValidationError(`The range holds more than ${MAX_VERIFY_ENTRIES} entries: verify it in narrower ranges.`, { maxEntries: MAX_VERIFY_ENTRIES });

    const hashes = new Map<number, string>();
    const anomalies: AuditAnomaly[] = [];
    let prev: { seq: number; hash: string } | undefined;
    for (let after = lo - 1; after < hi; ) {
      const rows = (await this.ds.query(`SELECT "seq", "entry" FROM "audit_entry" WHERE "tenant" = $1 AND "seq" > $2 AND "seq" <= $3 ORDER BY "seq" LIMIT ${BATCH}`, [tenant, after, hi])) as Array<{ seq: string; entry: AuditEntry }>;
      if (!rows.length) break;
      for (const row of rows) {
        const seq = Number(row.seq);
        const hash = auditEntryHash(row.entry);
        hashes.set(seq, hash);
        const inRange = seq >= fromSeq;
        // Entries missing before this one (deleted behind the trigger's back): one anomaly per gap.
        const expectedBefore = prev ? prev.seq + 1 : lo;
        if (seq > expectedBefore && seq - 1 >= fromSeq) {
          const missing = Math.max(expectedBefore, fromSeq);
          anomalies.push({ atSeq: missing, expectedPrevHash: hashes.get(missing - 1) ?? `missing entry ${missing - 1}`, actualPrevHash: '' });
        } else if (inRange) {
          const carried = row.entry?.prevHash ?? null;
          const moved = row.entry?.seq !== seq || row.entry?.tenant !== tenant;
          if (seq === 1) {
            if (carried !== null || moved) anomalies.push({ atSeq: seq, expectedPrevHash: 'null (the first entry)', actualPrevHash: carried ?? '' });
          } else if (prev && prev.seq === seq - 1 && (carried !== prev.hash || moved)) {
            anomalies.push({ atSeq: seq, expectedPrevHash: prev.hash, actualPrevHash: carried ?? '' });
          }
        }
        prev = { seq, hash };
      }
      after = Number(rows[rows.length - 1].seq);
    }
    // The last entry has no successor: the chain head holds the hash its successor will carry.
    if (chain && toSeq >= headSeq && headSeq >= Math.max(fromSeq, 1)) {
      if (!prev || prev.seq < headSeq) {
        const missing = prev ? prev.seq + 1 : Math.max(fromSeq, 1);
        anomalies.push({ atSeq: missing, expectedPrevHash: prev?.hash ?? `missing entry ${missing - 1}`, actualPrevHash: '' });
      } else if (chain.head_hash !== prev.hash) {
        anomalies.push({ atSeq: headSeq + 1, expectedPrevHash: prev.hash, actualPrevHash: chain.head_hash ?? '' });
      }
    }

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
      let ok = leaves.length === at - from && (previousAt === undefined || previousAt === from) && cp.key_fingerprint === keys.fingerprint;
      ok = ok && merkleRoot(leaves) === cp.merkle_root;
      try {
        ok = ok && verify(null, Buffer.from(cp.merkle_root, 'hex'), keys.publicKey, Buffer.from(cp.signature, 'base64'));
      } catch {
        ok = false;
      }
      if (!ok) checkpointsValid = false;
      previousAt = at;
      checkpoints.push({ checkpoint: cp.id, atSequence: at, merkleRoot: cp.merkle_root, signature: cp.signature });
    }
    anomalies.sort((a, b) => a.atSeq - b.atSeq);
    return { fromSeq, toSeq, chainValid: anomalies.length === 0 && checkpointsValid, checkpointsValid, checkpoints, anomalies };
  }
}
