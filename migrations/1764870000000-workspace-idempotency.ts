import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An `Idempotency-Key` belongs to the workspace that used it, like every other record of a
 * workspace: the same key in another workspace of the tenant is another key (it neither replays
 * nor conflicts, and discloses nothing). `workspace_key` is the run's workspace, '' for a
 * tenant-level run, so the unique index treats "no workspace" as one scope.
 */
export class WorkspaceIdempotency1764870000000 implements MigrationInterface {
  name = 'WorkspaceIdempotency1764870000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" ADD COLUMN IF NOT EXISTS "workspace_key" text NOT NULL DEFAULT ''`);
    await q.query(`UPDATE "run" SET "workspace_key" = "workspace" WHERE "workspace" IS NOT NULL AND "workspace_key" <> "workspace"`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "run_idempotency_scope_uq" ON "run" ("tenant", "workspace_key", "idempotency_key")`);
    await q.query(`DROP INDEX IF EXISTS "run_idempotency_uq"`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "run_idempotency_uq" ON "run" ("tenant", "idempotency_key")`);
    await q.query(`DROP INDEX IF EXISTS "run_idempotency_scope_uq"`);
    await q.query(`ALTER TABLE "run" DROP COLUMN IF EXISTS "workspace_key"`);
  }
}
