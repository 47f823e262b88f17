import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Commitment (RFC 0068) and heartbeat (RFC 0060) continuation of standing goals: their arm state. */
export class GoalContinuationArms1764830000001 implements MigrationInterface {
  name = 'GoalContinuationArms1764830000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "goal" ADD "commitment_at" TIMESTAMP WITH TIME ZONE`);
    await q.query(`ALTER TABLE "goal" ADD "heartbeat_state" jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "goal" DROP COLUMN "heartbeat_state"`);
    await q.query(`ALTER TABLE "goal" DROP COLUMN "commitment_at"`);
  }
}
