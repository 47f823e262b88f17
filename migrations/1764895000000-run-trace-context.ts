import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A run keeps the W3C trace context (`traceparent`, `tracestate`) of the request that created it: the
 * run executes later, possibly on another replica, and its spans join the creating request's trace.
 * Nullable: runs created before, or by a request without a trace context, start a trace of their own.
 */
export class RunTraceContext1764895000000 implements MigrationInterface {
  name = 'RunTraceContext1764895000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" ADD COLUMN IF NOT EXISTS "trace_parent" text, ADD COLUMN IF NOT EXISTS "trace_state" text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" DROP COLUMN IF EXISTS "trace_state", DROP COLUMN IF EXISTS "trace_parent"`);
  }
}
