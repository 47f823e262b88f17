import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `run.followed_until`: set by a replica following the events of a run another replica executes,
 * so that the executing replica's writes notify it (and only then: a NOTIFY serializes the commits
 * that send one, so the engine does not send them for runs nobody follows from elsewhere).
 */
export class RunFollowedUntil1764950000001 implements MigrationInterface {
  name = 'RunFollowedUntil1764950000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" ADD COLUMN "followed_until" TIMESTAMP WITH TIME ZONE`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" DROP COLUMN "followed_until"`);
  }
}
