import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The tamper-evident audit log (auth-profiles.md §"Audit-log integrity"), one hash chain per tenant:
 *
 * - `audit_chain`: the head of a tenant's chain (last sequence, the hash the next entry carries as
 *   `prevHash`, the last checkpoint). Appends upsert this row first, so its row lock serializes the
 *   appends of a tenant across replicas until the appender's transaction commits: the chain cannot fork.
 * - `audit_entry`: the entries, `entry` being the exact object that was hashed (with its `prevHash`).
 * - `audit_checkpoint`: signed checkpoints (Ed25519 over the Merkle root of the entries since the previous one).
 *
 * Entries and checkpoints are append-only at the storage layer: a trigger refuses UPDATE and DELETE,
 * so only someone able to disable triggers (a privileged insider) can rewrite them, and the chain
 * and the signed checkpoints make that rewrite detectable.
 */
export class AuditLog1764940000000 implements MigrationInterface {
  name = 'AuditLog1764940000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "audit_chain" ("tenant" text NOT NULL, "head_seq" bigint NOT NULL DEFAULT 0, "head_hash" text, "last_checkpoint_seq" bigint NOT NULL DEFAULT 0, CONSTRAINT "audit_chain_pk" PRIMARY KEY ("tenant"))`);
    await q.query(`CREATE TABLE "audit_entry" ("tenant" text NOT NULL, "seq" bigint NOT NULL, "action" text NOT NULL, "entry" jsonb NOT NULL, "prev_hash" text, "hash" text NOT NULL, "created_at" timestamptz NOT NULL DEFAULT now(), CONSTRAINT "audit_entry_pk" PRIMARY KEY ("tenant", "seq"))`);
    await q.query(`CREATE TABLE "audit_checkpoint" ("id" text NOT NULL, "tenant" text NOT NULL, "at_seq" bigint NOT NULL, "prev_at_seq" bigint NOT NULL, "merkle_root" text NOT NULL, "signature" text NOT NULL, "key_fingerprint" text NOT NULL, "created_at" timestamptz NOT NULL DEFAULT now(), CONSTRAINT "audit_checkpoint_pk" PRIMARY KEY ("id"))`);
    await q.query(`CREATE UNIQUE INDEX "audit_checkpoint_seq_uq" ON "audit_checkpoint" ("tenant", "at_seq")`);
    await q.query(`
      CREATE OR REPLACE FUNCTION "audit_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'the audit log is append-only: % on % refused', TG_OP, TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
      END
      $$`);
    await q.query(`CREATE TRIGGER "audit_entry_append_only" BEFORE UPDATE OR DELETE ON "audit_entry" FOR EACH ROW EXECUTE FUNCTION "audit_append_only"()`);
    await q.query(`CREATE TRIGGER "audit_checkpoint_append_only" BEFORE UPDATE OR DELETE ON "audit_checkpoint" FOR EACH ROW EXECUTE FUNCTION "audit_append_only"()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "audit_checkpoint"`);
    await q.query(`DROP TABLE IF EXISTS "audit_entry"`);
    await q.query(`DROP TABLE IF EXISTS "audit_chain"`);
    await q.query(`DROP FUNCTION IF EXISTS "audit_append_only"()`);
  }
}
