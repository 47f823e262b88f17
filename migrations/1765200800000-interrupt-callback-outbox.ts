import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Interrupt callbacks (`createRun.callbackUrl`, docs/interrupts.md "Callback delivery") move from a
 * process's memory to an outbox: one row per opened interrupt to notify, claimed by any replica,
 * retried with backoff, kept across restarts. The partial index holds only the rows still to send.
 */
export class InterruptCallbackOutbox1765200800000 implements MigrationInterface {
  name = 'InterruptCallbackOutbox1765200800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE "interrupt_callback" ("interrupt_id" uuid NOT NULL, "tenant" text NOT NULL, "run_id" uuid NOT NULL, "node_id" text NOT NULL, "url" text NOT NULL, "status" text NOT NULL DEFAULT 'pending', "attempts" integer NOT NULL DEFAULT 0, "next_attempt_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "last_error" text, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_interrupt_callback" PRIMARY KEY ("interrupt_id"))`,
    );
    await q.query(`CREATE INDEX "interrupt_callback_due_idx" ON "interrupt_callback" ("next_attempt_at") WHERE "status" IN ('pending', 'delivering')`);
    await q.query(`CREATE INDEX "interrupt_callback_run_idx" ON "interrupt_callback" ("run_id")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "interrupt_callback"`);
  }
}
