import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An approval gate names what it holds: a title for the people asked, and for a run step the run,
 * the node and the workflow. Gates opened before this migration get them from what was recorded then:
 * the run step from the gate's `artifact_ref` (`run:<runId>#<nodeId>`) and its run, the title from the
 * `interrupt.requested` event that opened the gate. The columns stay nullable so a replica that does
 * not write them yet keeps working; the host falls back to a title of its own.
 */
export class ApprovalSubjectFacts1764880000000 implements MigrationInterface {
  name = 'ApprovalSubjectFacts1764880000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "approval" ADD COLUMN IF NOT EXISTS "title" text, ADD COLUMN IF NOT EXISTS "run_id" uuid, ADD COLUMN IF NOT EXISTS "node_id" text, ADD COLUMN IF NOT EXISTS "workflow_id" text`);
    await q.query(
      `UPDATE "approval" a SET "run_id" = r."id", "node_id" = substring(a."artifact_ref" from '^run:[^#]+#(.+)$'), "workflow_id" = r."workflow_id"
       FROM "run" r WHERE a."subject_kind" = 'run-node' AND a."run_id" IS NULL AND r."id" = a."subject_id" AND r."tenant" = a."tenant"`,
    );
    await q.query(
      `UPDATE "approval" a SET "title" = e."payload"->'data'->>'title'
       FROM "event" e WHERE a."title" IS NULL AND e."tenant" = a."tenant" AND e."type" = 'interrupt.requested' AND e."payload"->'data'->>'gateId' = a."id"::text`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "approval" DROP COLUMN IF EXISTS "workflow_id", DROP COLUMN IF EXISTS "node_id", DROP COLUMN IF EXISTS "run_id", DROP COLUMN IF EXISTS "title"`);
  }
}
