import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Retention in O(batch): the terminal runs in the order the sweep deletes them (by their finish time,
 * their creation for a run that recorded none), so each batch of the sweep reads the head of this
 * index instead of scanning and sorting the whole `run` table (docs/operations.md §Retention).
 * Only terminal runs are in it: runs in flight cost it nothing. The keepers are probed per picked
 * run: `goal_run_run_idx` finds the goals a run counts for (the goals' keeper) without reading
 * every active goal's ledger.
 *
 * `CREATE INDEX` blocks writes to `run` until the migration commits: on a big table, build it
 * beforehand with `CREATE INDEX CONCURRENTLY IF NOT EXISTS` (docs/operations.md, upgrades).
 */
export class RunExpiryIndex1765000220000 implements MigrationInterface {
  name = 'RunExpiryIndex1765000220000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX IF NOT EXISTS "run_expiry_idx" ON "run" ((coalesce("completed_at", "created_at")), "id") WHERE "status" IN ('completed', 'failed', 'cancelled')`,
    );
    await q.query(`CREATE INDEX IF NOT EXISTS "goal_run_run_idx" ON "goal_run" ("tenant", "run_id")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "goal_run_run_idx"`);
    await q.query(`DROP INDEX "run_expiry_idx"`);
  }
}
