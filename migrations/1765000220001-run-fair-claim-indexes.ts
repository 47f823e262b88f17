import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The fair claim (src/capabilities/runs/engine/run-claim-sql.ts, docs/operations.md §Fair scheduling):
 * `run_claim_tenant_idx` lists the tenants with claimable runs (a skip scan, one probe per tenant) and
 * each tenant's claimable runs oldest first; `run_leased_idx` holds only the leased ones, so a
 * tenant's active runs are counted without reading its backlog.
 *
 * `CREATE INDEX` blocks writes to `run` until the migration commits: on a big table, build them
 * beforehand with `CREATE INDEX CONCURRENTLY IF NOT EXISTS` (docs/operations.md, upgrades).
 */
export class RunFairClaimIndexes1765000220001 implements MigrationInterface {
  name = 'RunFairClaimIndexes1765000220001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS "run_claim_tenant_idx" ON "run" ("tenant", "created_at") WHERE "kind" = 'workflow' AND "status" IN ('pending', 'running', 'cancelling')`);
    await q.query(`CREATE INDEX IF NOT EXISTS "run_leased_idx" ON "run" ("tenant") WHERE "kind" = 'workflow' AND "status" IN ('pending', 'running', 'cancelling') AND "lease_owner" IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "run_leased_idx"`);
    await q.query(`DROP INDEX "run_claim_tenant_idx"`);
  }
}
