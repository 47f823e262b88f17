import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The run list filtered by workflow (`GET /runs?workflowId=`, the v2 `runList.filters` facet) in
 * O(page): (tenant, workflow_id, created_at, id), the list's order under the filter, so a page of a
 * rarely run workflow is the head of one index range instead of a walk of the tenant's history.
 *
 * `CREATE INDEX` blocks writes to `run` until the migration commits: on a big table, build it
 * beforehand with `CREATE INDEX CONCURRENTLY IF NOT EXISTS` (docs/operations.md, upgrades).
 */
export class RunListWorkflowIndex1765000130000 implements MigrationInterface {
  name = 'RunListWorkflowIndex1765000130000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS "run_tenant_workflow_created_idx" ON "run" ("tenant", "workflow_id", "created_at", "id")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "run_tenant_workflow_created_idx"`);
  }
}
