import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Standing goals (RFC 0097): the goal rows with their continuation lease, and one row per contributing run. */
export class Goals1764720000000 implements MigrationInterface {
  name = 'Goals1764720000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "goal" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "tenant" text NOT NULL, "workspace" text, "principal" text, "objective" text NOT NULL, "state" text NOT NULL DEFAULT 'active', "judge" text NOT NULL, "verifier_ref" text, "criteria" jsonb, "continuation_mode" text NOT NULL, "arm_ref" text, "schedule" jsonb, "worker" text, "bounds" jsonb NOT NULL, "deadline_at" TIMESTAMP WITH TIME ZONE, "iterations" integer NOT NULL DEFAULT '0', "cost_usd" double precision NOT NULL DEFAULT '0', "contributing_run_ids" text array NOT NULL DEFAULT '{}', "last_verdict" jsonb, "paused" boolean NOT NULL DEFAULT false, "next_due_at" TIMESTAMP WITH TIME ZONE, "lease_owner" text, "lease_expires_at" TIMESTAMP WITH TIME ZONE, "dispatch_key" text, "pending_run_id" text, "dispatch_count" integer NOT NULL DEFAULT '0', "closed_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL, "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_88c8e2b461b711336c836b1e130" PRIMARY KEY ("id"))`);
    // The scheduler's cross-tenant claim of due goals (the one goal index that does not lead with tenant).
    await q.query(`CREATE INDEX "goal_due_idx" ON "goal" ("next_due_at")`);
    await q.query(`CREATE INDEX "goal_tenant_state_idx" ON "goal" ("tenant", "state", "created_at")`);
    await q.query(`CREATE TABLE "goal_run" ("tenant" text NOT NULL, "goal_id" uuid NOT NULL, "run_id" text NOT NULL, "ordinal" integer NOT NULL, "status" text NOT NULL, "cost_usd" double precision, "satisfied" boolean, "confidence" double precision, "recorded_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_ea3b561aefb60ea502f7d4f89c2" PRIMARY KEY ("tenant", "goal_id", "run_id"))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "goal_run"`);
    await q.query(`DROP TABLE "goal"`);
  }
}
