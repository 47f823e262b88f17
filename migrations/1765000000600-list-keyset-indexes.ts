import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Lists in O(page): an index for every filter of the list routes, in the order the list reads
 * (`ORDER BY created_at, id` in one direction, read forwards or backwards) and ending in the primary
 * key, so a page is the first rows of one index range and a keyset cursor continues inside it. Without
 * `id` in the index, rows created by one statement (one `now()`) form a tie group the planner sorts
 * whole before it can serve the page; without the filter column before `created_at`, a rare state is
 * found by reading the tenant's whole history. `test/operations/list-plans.e2e-spec.ts` EXPLAINs
 * every list and poll statement on a seeded database and fails on a sequential scan or a sort.
 *
 * Replaced (their columns are a prefix of, or filtered by, the new ones; no other statement's plan
 * needs them): `approval_tenant_state_idx`, `goal_tenant_state_idx`, `webhook_delivery_history_idx`.
 *
 * Building an index on a big table: `CREATE INDEX` blocks writes to that table (reads go on) until
 * it is built, and the migrations run in one transaction, so every table named here refuses writes
 * until the whole migration commits (docs/operations.md, upgrades). An operator with large tables can
 * build the same indexes beforehand with `CREATE INDEX CONCURRENTLY IF NOT EXISTS` (the statements
 * below, with CONCURRENTLY, outside a transaction) while the old version serves: this migration then
 * finds them and only drops the replaced ones, which takes a brief exclusive lock.
 */
export class ListKeysetIndexes1765000000600 implements MigrationInterface {
  name = 'ListKeysetIndexes1765000000600';

  async up(q: QueryRunner): Promise<void> {
    for (const sql of LIST_INDEXES) await q.query(sql.replace('CREATE INDEX', 'CREATE INDEX IF NOT EXISTS'));
    await q.query(`DROP INDEX IF EXISTS "approval_tenant_state_idx"`);
    await q.query(`DROP INDEX IF EXISTS "goal_tenant_state_idx"`);
    await q.query(`DROP INDEX IF EXISTS "webhook_delivery_history_idx"`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX "approval_tenant_state_idx" ON "approval" ("tenant", "state", "created_at")`);
    await q.query(`CREATE INDEX "goal_tenant_state_idx" ON "goal" ("tenant", "state", "created_at")`);
    await q.query(`CREATE INDEX "webhook_delivery_history_idx" ON "webhook_delivery" ("tenant", "webhook_id", "created_at")`);
    for (const sql of LIST_INDEXES) await q.query(`DROP INDEX "${/CREATE INDEX "([^"]+)"/.exec(sql)?.[1]}"`);
  }
}

/** The indexes, as docs/operations.md lists them for a build ahead of the upgrade. */
export const LIST_INDEXES: readonly string[] = [
  // GET /v1/approvals, and ?state=
  `CREATE INDEX "approval_tenant_created_idx" ON "approval" ("tenant", "created_at", "id")`,
  `CREATE INDEX "approval_tenant_state_created_idx" ON "approval" ("tenant", "state", "created_at", "id")`,
  // GET /v1/goals, and ?state=
  `CREATE INDEX "goal_tenant_created_idx" ON "goal" ("tenant", "created_at", "id")`,
  `CREATE INDEX "goal_tenant_state_created_idx" ON "goal" ("tenant", "state", "created_at", "id")`,
  // GET /v1/goals/{id}/runs: by ordinal, then run id
  `CREATE INDEX "goal_run_ordinal_idx" ON "goal_run" ("tenant", "goal_id", "ordinal", "run_id")`,
  // GET /v1/proposals, and ?state= (a workspace-bound caller's ?state= keeps proposal_tenant_state_idx)
  `CREATE INDEX "proposal_tenant_created_idx" ON "proposal" ("tenant", "created_at", "id")`,
  `CREATE INDEX "proposal_tenant_state_created_idx" ON "proposal" ("tenant", "state", "created_at", "id")`,
  // GET /v1/webhooks/{id}/deliveries, and ?status=
  `CREATE INDEX "webhook_delivery_history_created_idx" ON "webhook_delivery" ("tenant", "webhook_id", "created_at", "id")`,
  `CREATE INDEX "webhook_delivery_status_created_idx" ON "webhook_delivery" ("tenant", "webhook_id", "status", "created_at", "id")`,
];
