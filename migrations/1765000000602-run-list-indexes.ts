import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The run list in O(page) (`GET /v1/runs`, newest first, optionally of one status): its order
 * (`created_at`, `id`) as an index ending in the primary key, and the same under `status`, so a page is
 * the head of one index range. `run_tenant_idx` (tenant, created_at) made runs created by one statement
 * (one `now()`) a tie group sorted whole, and a rare status read the tenant's whole history; the new
 * index starts with the same columns, so it serves every statement the old one served, which is dropped.
 *
 * `CREATE INDEX` blocks writes to `run` (reads go on) until the migration commits: on a big table,
 * build both indexes beforehand with `CREATE INDEX CONCURRENTLY IF NOT EXISTS` (docs/operations.md,
 * upgrades); this migration then finds them and only drops the old one.
 */
export class RunListIndexes1765000000602 implements MigrationInterface {
  name = 'RunListIndexes1765000000602';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS "run_tenant_created_idx" ON "run" ("tenant", "created_at", "id")`);
    await q.query(`CREATE INDEX IF NOT EXISTS "run_tenant_status_created_idx" ON "run" ("tenant", "status", "created_at", "id")`);
    await q.query(`DROP INDEX IF EXISTS "run_tenant_idx"`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX "run_tenant_idx" ON "run" ("tenant", "created_at")`);
    await q.query(`DROP INDEX "run_tenant_status_created_idx"`);
    await q.query(`DROP INDEX "run_tenant_created_idx"`);
  }
}
