import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `tool_dispatch_policy`: a tenant's override of the governed dispatch policy (allow, approve or deny
 * a tool call by safety tier and per tool id), with a revision incremented on every change.
 */
export class ToolDispatchPolicy1765000000000 implements MigrationInterface {
  name = 'ToolDispatchPolicy1765000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "tool_dispatch_policy" (
      "tenant" text NOT NULL,
      "revision" integer NOT NULL,
      "tiers" jsonb NOT NULL,
      "tools" jsonb NOT NULL,
      "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "updated_by" text NOT NULL,
      CONSTRAINT "PK_dce4ae3c8e1e53755ae45bc0833" PRIMARY KEY ("tenant"))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tool_dispatch_policy"`);
  }
}
