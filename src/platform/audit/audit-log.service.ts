import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { rowsOf } from '../database/rows';
import { ValidationError } from '../errors/domain-error';
import type { Principal } from '../identity/principal';
import { checkCheckpoints } from './audit-checkpoint-check';
import { auditEntryHash, merkleRoot } from './merkle';
import { InvariantViolation } from '../errors/internal-fault';
import { AuditCheckpointRecord, queueCheckpointExport } from './audit-checkpoint.exporter';
import { AuditSigningService, CheckpointSigner } from './audit-signing.service';

/** The security-relevant actions the host records (docs/security.md §"Audit log"). */
export type AuditAction =
  | 'key.created'
  | 'key.revoked'
  | 'key.rotated'
  | 'key.used'
  | 'authorization.decided'
  | 'approval.decided'
  | 'approval.overridden'
  | 'proposal.applied'
  | 'import.applied'
  | 'webhook.registered'
  | 'webhook.unregistered'
  | 'webhook.secret-rotated'
  | 'run.created'
  | 'run.cancel-requested'
  | 'run.forked'
  | 'connection.credential-rotated'
  | 'connection.credential-retired'
  | 'mcp.version-downgraded'
  | 'mcp.version-refused'
  | 'negotiation.decided'
  | 'mcp.tool-held'
  | 'mcp.tool-approved'
  | 'tool.dispatch-decided'
  | 'egress.decided'
  | 'tool.dispatch-policy-changed'
  | 'scim.user.provisioned'
  | 'scim.user.deprovisioned'
  | 'scim.user.reactivated'
  | 'auth.saml.signed-in'
  | 'auth.saml.refused'
  | 'workspace.file-written'
  | 'workspace.file-deleted';

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

/** A verifier's pinned checkpoint: its sequence and Merkle root. */
export interface AuditPin {
  seq: number;
  root: string;
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

/** Detail names that could carry a credential are refused outright: a programming error, never stored. */
const SECRET_NAME = /secret|token|password|passphrase|credential|authorization|apikey|api_key|private/i;
/** The most entries one verify call re-walks. */
export const MAX_VERIFY_ENTRIES = 100_000;
const BATCH = 1000;

/** The principal's part an entry records: who acted, never what they presented. */
export function auditActor(p: Principal): AuditRecord['actor'] {
  return { principal: p.principal, kind: p.kind, ...(p.keyId ? { keyId: p.keyId } : {}) };
}

/**
 * The tamper-evident audit log (auth-profiles.md §"Audit-log integrity"): one hash chain per tenant,
 * each entry carrying `prevHash`, the SHA-256 of the previous entry's JCS text (null for the first).
 * An entry is appended in the transaction of the action it records, after the action's own writes:
 * the upsert of the tenant's `audit_chain` row takes its row lock, which orders every append of the
 * tenant on every replica until that transaction ends (so the chain never forks, and an action that
 * rolls back leaves no entry). The first entry and every `checkpointIntervalEntries`-th after the
 * last checkpoint mint a checkpoint in the same transaction: an Ed25519 signature over the Merkle
 * root of the entries since the previous checkpoint, by the key AuditSigningService holds, queued
 * for the configured export sinks in the same transaction.
 */
@Injectable()
export class AuditLogService {
  private readonly logger = new Logger('audit');

  constructor(
    private readonly ds: DataSource,
    private readonly signing: AuditSigningService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  get checkpointIntervalEntries(): number {
    return this.config.audit.checkpointIntervalEntries;
  }

  get checkpointIntervalSeconds(): number {
    return this.config.audit.checkpointIntervalSeconds;
  }

  /** The advertised `checkpointPublicKey`: base64 SubjectPublicKeyInfo DER. */
  async publicKeySpki(): Promise<string> {
    return (await this.signing.signer()).spki;
  }

  /**
   * Appends one entry inside the caller's transaction. Call it after the action's own writes, as the
   * transaction's last statement where possible: the chain row stays locked until the commit.
   */
  async record(m: EntityManager, rec: AuditRecord): Promise<void> {
    // The key in the database is read in this transaction (a failure there fails it anyway); a signer
    // elsewhere that cannot be reached (a KMS away, a plugin the CLI does not load) leaves the new
    // entries to the sealer's next pass instead of failing the action.
    const signer = await this.signing.signer(m).catch((err: unknown) => {
      if (this.signing.inDatabase) throw err;
      this.logger.warn({ msg: 'audit checkpoint signer unavailable: the entries are sealed at a later pass', tenant: rec.tenant, err });
      return undefined;
    });
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
    const due = seq === 1 || seq - lastCheckpoint >= this.config.audit.checkpointIntervalEntries;
    // A signer that fails (a KMS away) leaves the entries to the sealer's next pass, not the action failed.
    const checkpoint = due && !!signer && (await this.mintCheckpoint(m, signer, rec.tenant, lastCheckpoint, seq));
    await m.query(`UPDATE "audit_chain" SET "head_hash" = $2${checkpoint ? `, "last_checkpoint_seq" = "head_seq"` : ''} WHERE "tenant" = $1`, [rec.tenant, hash]);
  }

  /**
   * Signs the entries (after, atSeq] of a tenant and queues the checkpoint for the export sinks; the
   * caller holds the tenant's chain row lock. False, with nothing written, when the signer failed.
   */
  private async mintCheckpoint(m: EntityManager, signer: CheckpointSigner, tenant: string, after: number, atSeq: number): Promise<boolean> {
    const leaves = (await m.query(`SELECT "hash" FROM "audit_entry" WHERE "tenant" = $1 AND "seq" > $2 AND "seq" <= $3 ORDER BY "seq"`, [tenant, after, atSeq])) as Array<{ hash: string }>;
    const root = merkleRoot(leaves.map((l) => l.hash));
    let signature: string;
    try {
      signature = (await signer.sign(Buffer.from(root, 'hex'))).toString('base64');
    } catch (err) {
      this.logger.warn({ msg: 'audit checkpoint not signed: the entries are sealed at a later pass', tenant, atSeq, signer: signer.source, err });
      return false;
    }
    const record: AuditCheckpointRecord = {
      type: 'openwop.audit.checkpoint',
      tenant,
      checkpoint: `ckpt_${randomUUID()}`,
      atSequence: atSeq,
      prevAtSequence: after,
      merkleRoot: root,
      signature,
      keyFingerprint: signer.fingerprint,
      sealedAt: new Date().toISOString(),
    };
    await m.query(
      `INSERT INTO "audit_checkpoint" ("id", "tenant", "at_seq", "prev_at_seq", "merkle_root", "signature", "key_fingerprint") VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [record.checkpoint, tenant, atSeq, after, root, signature, signer.fingerprint],
    );
    await queueCheckpointExport(m, this.config, record);
    return true;
  }

  /**
   * Seals every chain whose newest entries no checkpoint covers yet (the time-based cadence,
   * `checkpointIntervalSeconds`): one checkpoint per such tenant at its head. Chains an appender
   * holds right now are skipped (SKIP LOCKED): that appender, or the next pass, seals them.
   * Returns how many checkpoints it minted.
   */
  async sealPending(signal?: AbortSignal): Promise<number> {
    const signer = await this.signing.signer();
    let sealed = 0;
    for (let pass = 0; pass < 100 && !signal?.aborted; pass++) {
      const n = await this.ds.transaction(async (m) => {
        const heads = (await m.query(
          `SELECT "tenant", "head_seq", "last_checkpoint_seq" FROM "audit_chain" WHERE "head_seq" > "last_checkpoint_seq" ORDER BY "tenant" LIMIT 100 FOR UPDATE SKIP LOCKED`,
        )) as Array<{ tenant: string; head_seq: string; last_checkpoint_seq: string }>;
        let minted = 0;
        for (const h of heads) {
          if (!(await this.mintCheckpoint(m, signer, h.tenant, Number(h.last_checkpoint_seq), Number(h.head_seq)))) continue;
          await m.query(`UPDATE "audit_chain" SET "last_checkpoint_seq" = "head_seq" WHERE "tenant" = $1`, [h.tenant]);
          minted++;
        }
        return heads.length && !minted ? -1 : heads.length;
      });
      // The signer failed on every chain of the pass: stop, the next slot tries again.
      if (n < 0) break;
      sealed += n;
      if (n < 100) break;
    }
    return sealed;
  }

  /**
   * Re-walks the tenant's entries [fromSeq, toSeq]: every `prevHash` against the recomputed hash of
   * the entry before it, the chain head against the recomputed hash of the last entry, and every
   * checkpoint in the range (Merkle root over the recomputed hashes it anchors, and its signature by
   * the current key or a trusted previous one). A `pin` (a verifier's last verified checkpoint, in
   * the range) must still be there with the same root: a truncation below it, or a rewrite of it, is
   * an anomaly at its sequence (`expectedPrevHash` the pinned root, `actualPrevHash` what is there).
   */
  async verify(tenant: string, fromSeq: number, toSeq: number, pin?: AuditPin): Promise<AuditVerifyResult> {
    const trusted = await this.signing.trustedKeys();
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

    const { checkpointsValid, checkpoints } = checkCheckpoints(cps, hashes, anomalies, trusted);
    if (pin) {
      const held = cps.find((c) => Number(c.at_seq) === pin.seq);
      if (held?.merkle_root !== pin.root) anomalies.push({ atSeq: pin.seq, expectedPrevHash: pin.root, actualPrevHash: held?.merkle_root ?? '' });
    }
    anomalies.sort((a, b) => a.atSeq - b.atSeq);
    return { fromSeq, toSeq, chainValid: anomalies.length === 0 && checkpointsValid, checkpointsValid, checkpoints, anomalies };
  }
}
