import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * RFC 0151 compensation plans (docs/runs.md §Compensation): one row per run whose unwind was
 * triggered, its inverse actions and their recorded outcomes in `entries`. The partial index holds
 * only the plans an unwind still has to execute, which the resume pass reads.
 */
export class RunCompensation1765100030000 implements MigrationInterface {
  name = 'RunCompensation1765100030000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE "run_compensation" ("run_id" uuid NOT NULL, "tenant" text NOT NULL, "workspace" text, "status" text NOT NULL, "trigger" text NOT NULL, "plan_version" integer NOT NULL DEFAULT 1, "profile_version" text NOT NULL, "ordering_model" text NOT NULL, "exhausted_disposition" text NOT NULL, "entries" jsonb NOT NULL, "lease_owner" text, "lease_until" TIMESTAMP WITH TIME ZONE, "revision" integer NOT NULL DEFAULT 0, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_run_compensation" PRIMARY KEY ("run_id"))`,
    );
    await q.query(`CREATE INDEX "run_compensation_active_idx" ON "run_compensation" ("lease_until") WHERE "status" IN ('pending', 'running')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "run_compensation"`);
  }
}
