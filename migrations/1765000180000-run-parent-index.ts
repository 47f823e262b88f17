import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The child runs of a run (`core.subWorkflow`, a `workflow` tool) found in O(children): a parent's
 * snapshot lists them (`childRuns[]`), a cancel cascades to them, and a restarted sub-workflow node
 * finds the child it started. The linkage is kept in the child's `metadata` (`parentRunId`,
 * `parentNodeId`), so the index is on that expression, for the rows that carry it only.
 *
 * `CREATE INDEX` blocks writes to `run` until the migration commits: on a big table, build it
 * beforehand with `CREATE INDEX CONCURRENTLY IF NOT EXISTS` (docs/operations.md, upgrades).
 */
export class RunParentIndex1765000180000 implements MigrationInterface {
  name = 'RunParentIndex1765000180000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS "run_parent_idx" ON "run" ("tenant", ("metadata" ->> 'parentRunId')) WHERE "metadata" ? 'parentRunId'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "run_parent_idx"`);
  }
}
