import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The run list filtered by workflow and status at once (`GET /v1/runs?workflowId=&status=`) in O(page)
 * for every status but `completed`: (tenant, workflow_id, status, created_at, id) over the runs not
 * completed, the list's order under both filters. Completed runs, most of a tenant's history, are left
 * out, so the index costs bytes only for the few runs that failed, were cancelled or are under way; a
 * page of completed runs of a workflow is read from `run_tenant_workflow_created_idx`, where nearly
 * every entry is one. Each filter alone had its index (`run_tenant_status_created_idx`,
 * `run_tenant_workflow_created_idx`); both together read the workflow's runs until a page of the status
 * was found, the whole history of a workflow that never failed.
 *
 * `CREATE INDEX` blocks writes to `run` until the migration commits: on a big table, build it
 * beforehand with `CREATE INDEX CONCURRENTLY IF NOT EXISTS` (docs/operations.md, upgrades).
 */
export class RunListWorkflowStatusIndex1765410000001 implements MigrationInterface {
  name = 'RunListWorkflowStatusIndex1765410000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS "run_tenant_workflow_status_created_idx" ON "run" ("tenant", "workflow_id", "status", "created_at", "id") WHERE "status" <> 'completed'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "run_tenant_workflow_status_created_idx"`);
  }
}
