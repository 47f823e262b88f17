import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Interrupts (HITL) share the approval-gate store: a gate now has a `kind` (`approval`,
 * `clarification`, `external-event`), the resume schema the resolving value is checked against, the
 * kind's data (questions, awaited event and its correlation), a rejection policy (`single-veto` or
 * `majority`) and, once resolved, the resume value and who resolved it. A decision records the voter
 * it counts for (`principal`) apart from the credential that submitted it (`submitted_by`).
 * `host_secret` keeps secrets the host generates once and every replica shares (the signing key of
 * interrupt tokens when none is configured).
 */
export class Interrupts1764900000000 implements MigrationInterface {
  name = 'Interrupts1764900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE "approval" ADD COLUMN IF NOT EXISTS "kind" text NOT NULL DEFAULT 'approval', ADD COLUMN IF NOT EXISTS "resume_schema" jsonb,
        ADD COLUMN IF NOT EXISTS "data" jsonb, ADD COLUMN IF NOT EXISTS "rejection_policy" text NOT NULL DEFAULT 'single-veto',
        ADD COLUMN IF NOT EXISTS "resume_value" jsonb, ADD COLUMN IF NOT EXISTS "resolved_by" text`,
    );
    await q.query(`CREATE INDEX IF NOT EXISTS "approval_run_node_idx" ON "approval" ("run_id", "node_id")`);
    await q.query(`ALTER TABLE "approval_decision" ADD COLUMN IF NOT EXISTS "submitted_by" text`);
    await q.query(`CREATE TABLE IF NOT EXISTS "host_secret" ("name" text PRIMARY KEY, "value" bytea NOT NULL, "created_at" timestamptz NOT NULL DEFAULT now())`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "host_secret"`);
    await q.query(`ALTER TABLE "approval_decision" DROP COLUMN IF EXISTS "submitted_by"`);
    await q.query(`DROP INDEX IF EXISTS "approval_run_node_idx"`);
    await q.query(
      `ALTER TABLE "approval" DROP COLUMN IF EXISTS "resolved_by", DROP COLUMN IF EXISTS "resume_value", DROP COLUMN IF EXISTS "rejection_policy",
        DROP COLUMN IF EXISTS "data", DROP COLUMN IF EXISTS "resume_schema", DROP COLUMN IF EXISTS "kind"`,
    );
  }
}
