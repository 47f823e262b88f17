import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A node row keeps no tenant (issue 41: bytes per run): it is its run's, and every read reaches it
 * through a run row read with the tenant (the engine's claim, a run found in the caller's scope, a
 * replay's source run joined with its tenant); retention deletes node rows by their runs' ids.
 *
 * Dropping the column changes only the catalog (no rewrite, no wait beyond the lock): rows written
 * from now on leave it out, older rows keep its bytes until they are deleted or rewritten.
 * `down` gives every node row its run's tenant again.
 */
export class RunNodeWithoutTenant1765420000000 implements MigrationInterface {
  name = 'RunNodeWithoutTenant1765420000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run_node" DROP COLUMN "tenant"`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run_node" ADD "tenant" text`);
    await q.query(`UPDATE "run_node" n SET "tenant" = r."tenant" FROM "run" r WHERE r."id" = n."run_id"`);
    // A node row whose run is gone (none should be) could not be given a tenant back: it goes.
    await q.query(`DELETE FROM "run_node" WHERE "tenant" IS NULL`);
    await q.query(`ALTER TABLE "run_node" ALTER COLUMN "tenant" SET NOT NULL`);
  }
}
