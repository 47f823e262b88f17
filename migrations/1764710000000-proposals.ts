import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Reviewable-learning proposals, their RFC 0051 approval gates, and installed automation schedules. */
export class Proposals1764710000000 implements MigrationInterface {
  name = 'Proposals1764710000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "proposal" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "tenant" text NOT NULL, "workspace_key" text NOT NULL DEFAULT '', "principal" text, "kind" text NOT NULL, "state" text NOT NULL DEFAULT 'draft', "title" text, "rationale" text, "artifact_bytes" text NOT NULL, "artifact_ref" text NOT NULL, "source_run_ids" text array NOT NULL DEFAULT '{}', "synthesizer_model" text, "evidence_key" text, "duplicate_of" text, "installed_artifact_ref" text, "approval_id" uuid, "pending_approval_id" uuid, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_ca872ecfe4fef5720d2d39e4275" PRIMARY KEY ("id"))`);
    await q.query(`CREATE UNIQUE INDEX "proposal_evidence_uq" ON "proposal" ("tenant", "workspace_key", "evidence_key")`);
    await q.query(`CREATE INDEX "proposal_tenant_state_idx" ON "proposal" ("tenant", "workspace_key", "state", "created_at")`);
    await q.query(`CREATE TABLE "approval" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "tenant" text NOT NULL, "workspace_key" text NOT NULL DEFAULT '', "subject_kind" text NOT NULL, "subject_id" uuid NOT NULL, "state" text NOT NULL DEFAULT 'pending', "required_scope" text NOT NULL, "required_role" text, "quorum" integer NOT NULL, "artifact_ref" text NOT NULL, "requested_by" text NOT NULL, "reason" text, "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, "decided_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_97bfd1cd9dff3c1302229da6b5c" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX "approval_subject_idx" ON "approval" ("tenant", "subject_id")`);
    await q.query(`CREATE INDEX "approval_tenant_state_idx" ON "approval" ("tenant", "state", "created_at")`);
    await q.query(`CREATE TABLE "approval_decision" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "tenant" text NOT NULL, "approval_id" uuid NOT NULL, "principal" text NOT NULL, "decision" text NOT NULL, "reason" text, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_b71cfdfcdd135e5d2204df9140c" PRIMARY KEY ("id"))`);
    await q.query(`CREATE UNIQUE INDEX "approval_decision_uq" ON "approval_decision" ("tenant", "approval_id", "principal")`);
    await q.query(`CREATE TABLE "automation_schedule" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "tenant" text NOT NULL, "workspace_key" text NOT NULL DEFAULT '', "name" text NOT NULL, "artifact_ref" text NOT NULL, "cron" text, "timezone" text, "interval_ms" integer, "action" jsonb NOT NULL, "enabled" boolean NOT NULL DEFAULT true, "next_run_at" TIMESTAMP WITH TIME ZONE, "last_run_at" TIMESTAMP WITH TIME ZONE, "last_run_id" text, "run_count" integer NOT NULL DEFAULT '0', "installed_by" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_785f50fedc3db784b0e47f638bf" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX "automation_schedule_due_idx" ON "automation_schedule" ("tenant", "next_run_at")`);
    await q.query(`CREATE UNIQUE INDEX "automation_schedule_name_uq" ON "automation_schedule" ("tenant", "workspace_key", "name")`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of ['automation_schedule', 'approval_decision', 'approval', 'proposal']) await q.query(`DROP TABLE "${t}"`);
  }
}
