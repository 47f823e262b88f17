import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The run list filtered by status (`GET /v1/runs?status=`) keeps its index for every status but
 * `completed` (issue 41: bytes per run): (tenant, status, created_at, id) over the runs not completed,
 * as `run_tenant_workflow_status_created_idx` (migration 1765410000001) is for the workflow and status
 * filter. Completed runs, most of a tenant's history, no longer each hold an entry (74 bytes a run); a
 * page of completed runs is read from `run_tenant_created_idx`, the tenant's runs in the list's order,
 * nearly every entry of which is one. The in-flight count of the backpressure check (pending and
 * running runs) and the waiting-input sweep read the new index as they read the old.
 *
 * `CREATE INDEX` blocks writes to `run` (reads go on) until the migration commits: on a big table,
 * build the index beforehand with `CREATE INDEX CONCURRENTLY IF NOT EXISTS` (docs/operations.md,
 * upgrades); this migration then finds it and only drops the old one.
 */
export class RunStatusIndexNotCompleted1765430010000 implements MigrationInterface {
  name = 'RunStatusIndexNotCompleted1765430010000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS "run_tenant_status_not_completed_idx" ON "run" ("tenant", "status", "created_at", "id") WHERE "status" <> 'completed'`);
    await q.query(`DROP INDEX IF EXISTS "run_tenant_status_created_idx"`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX "run_tenant_status_created_idx" ON "run" ("tenant", "status", "created_at", "id")`);
    await q.query(`DROP INDEX "run_tenant_status_not_completed_idx"`);
  }
}
