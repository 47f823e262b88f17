import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Fewer index entries per run. Every run is inserted once and updated about twice (its claim, its
 * end); each update that changes an indexed column, or finds no room on its page, writes an entry
 * into every index of the table.
 * - `run_claim_idx` (status, lease_expires_at) goes: the claim reads `run_claimable_idx`, and the
 *   in-progress gauge gets `run_active_idx`, on the active statuses only. A claim then changes no
 *   indexed column (lease owner, expiry, fence), and with room left on each page (fillfactor 80)
 *   it is a heap-only update that writes no index entry at all.
 * - The Idempotency-Key and scopeId indexes hold only the runs that have one.
 * - `event_tenant_type_idx` (every event) becomes `event_tool_call_idx`: only `agent.toolCalled`
 *   events are ever looked up by type (the proposal synthesis); four run events no longer add one.
 */
export class RunWriteVolume1764970000000 implements MigrationInterface {
  name = 'RunWriteVolume1764970000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" SET (fillfactor = 80)`);
    await q.query(`DROP INDEX "run_claim_idx"`);
    await q.query(
      `CREATE INDEX "run_active_idx" ON "run" ("status") WHERE "kind" = 'workflow' AND "status" IN ('pending', 'running', 'waiting-approval', 'waiting-input', 'waiting-external', 'cancelling')`,
    );
    await q.query(`DROP INDEX "run_idempotency_scope_uq"`);
    await q.query(`CREATE UNIQUE INDEX "run_idempotency_scope_uq" ON "run" ("tenant", "workspace_key", "idempotency_key") WHERE "idempotency_key" IS NOT NULL`);
    await q.query(`DROP INDEX "run_scope_idx"`);
    await q.query(`CREATE INDEX "run_scope_idx" ON "run" ("tenant", "workspace_key", "scope_id") WHERE "scope_id" IS NOT NULL`);
    await q.query(`DROP INDEX "event_tenant_type_idx"`);
    await q.query(`CREATE INDEX "event_tool_call_idx" ON "event" ("tenant", "created_at") WHERE "type" = 'agent.toolCalled'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "event_tool_call_idx"`);
    await q.query(`CREATE INDEX "event_tenant_type_idx" ON "event" ("tenant", "type", "created_at")`);
    await q.query(`DROP INDEX "run_scope_idx"`);
    await q.query(`CREATE INDEX "run_scope_idx" ON "run" ("tenant", "workspace_key", "scope_id")`);
    await q.query(`DROP INDEX "run_idempotency_scope_uq"`);
    await q.query(`CREATE UNIQUE INDEX "run_idempotency_scope_uq" ON "run" ("tenant", "workspace_key", "idempotency_key")`);
    await q.query(`DROP INDEX "run_active_idx"`);
    await q.query(`CREATE INDEX "run_claim_idx" ON "run" ("status", "lease_expires_at")`);
    await q.query(`ALTER TABLE "run" RESET (fillfactor)`);
  }
}
