import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The outbox of the audit checkpoint export (docs/security.md §"Audit log"): when sinks are
 * configured, the transaction that seals a checkpoint also writes one row per sink holding the
 * record to send, so a checkpoint is exported even if the host stops right after its commit, and
 * even if someone deletes the checkpoint itself before it was sent. A background worker on every
 * replica that runs the scheduler claims due rows (`FOR UPDATE SKIP LOCKED`, a lease in
 * `next_attempt_at`), sends them and deletes them; a failure is retried with backoff, never dropped.
 */
export class AuditCheckpointExport1764980000001 implements MigrationInterface {
  name = 'AuditCheckpointExport1764980000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE "audit_checkpoint_export" ("sink" text NOT NULL, "checkpoint" text NOT NULL, "tenant" text NOT NULL, "record" jsonb NOT NULL, "attempts" integer NOT NULL DEFAULT 0, "next_attempt_at" timestamptz NOT NULL DEFAULT now(), "last_error" text, "created_at" timestamptz NOT NULL DEFAULT now(), CONSTRAINT "audit_checkpoint_export_pk" PRIMARY KEY ("sink", "checkpoint"))`,
    );
    await q.query(`CREATE INDEX "audit_checkpoint_export_due_idx" ON "audit_checkpoint_export" ("sink", "next_attempt_at")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "audit_checkpoint_export"`);
  }
}
