import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The scheduler writes every claimed goal row twice per iteration (the claim, then the outcome).
 * Free space on each page lets the claim (which touches no indexed column) be a HOT update: no new
 * index entries, so the due-goal scan does not wade through dead entries while a batch is in flight.
 */
export class GoalSchedulerHotUpdates1764830000000 implements MigrationInterface {
  name = 'GoalSchedulerHotUpdates1764830000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "goal" SET (fillfactor = 70)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "goal" RESET (fillfactor)`);
  }
}
