import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The run engine: workflow runs evolve the platform's `run` table (definition, inputs, bounds
 * state, outputs, the replica lease with its fencing token, the idempotency key) and each node's
 * state lives in `run_node`.
 */
export class Runs1764840000000 implements MigrationInterface {
  name = 'Runs1764840000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run"
      ADD "workflow_id" text, ADD "definition" jsonb, ADD "inputs" jsonb, ADD "configurable" jsonb, ADD "outputs" jsonb, ADD "error" jsonb,
      ADD "scopes" text array, ADD "idempotency_key" text, ADD "request_hash" text, ADD "lease_owner" text, ADD "lease_expires_at" TIMESTAMP WITH TIME ZONE,
      ADD "fence" integer NOT NULL DEFAULT '0', ADD "cancel_requested" boolean NOT NULL DEFAULT false, ADD "node_executions" integer NOT NULL DEFAULT '0',
      ADD "cost_usd" double precision NOT NULL DEFAULT '0', ADD "current_node_id" text, ADD "started_at" TIMESTAMP WITH TIME ZONE, ADD "completed_at" TIMESTAMP WITH TIME ZONE`);
    // The engine's cross-tenant claim of runs to execute (like goal_due_idx, it does not lead with tenant).
    await q.query(`CREATE INDEX "run_claim_idx" ON "run" ("status", "lease_expires_at")`);
    await q.query(`CREATE UNIQUE INDEX "run_idempotency_uq" ON "run" ("tenant", "idempotency_key")`);
    await q.query(`CREATE TABLE "run_node" ("run_id" uuid NOT NULL, "node_id" text NOT NULL, "tenant" text NOT NULL, "type_id" text NOT NULL, "status" text NOT NULL, "attempt" integer NOT NULL DEFAULT '0', "outputs" jsonb, "error" jsonb, "gate_id" uuid, "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_run_node" PRIMARY KEY ("run_id", "node_id"))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "run_node"`);
    await q.query(`DROP INDEX "run_idempotency_uq"`);
    await q.query(`DROP INDEX "run_claim_idx"`);
    for (const c of ['workflow_id', 'definition', 'inputs', 'configurable', 'outputs', 'error', 'scopes', 'idempotency_key', 'request_hash', 'lease_owner', 'lease_expires_at', 'fence', 'cancel_requested', 'node_executions', 'cost_usd', 'current_node_id', 'started_at', 'completed_at']) {
      await q.query(`ALTER TABLE "run" DROP COLUMN "${c}"`);
    }
  }
}
