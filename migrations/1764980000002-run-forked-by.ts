import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `run.forked_by`: the principal who asked for a fork (`POST /v1/runs/{runId}:fork`). A fork is
 * owned by its source run's owner (its `principal`), so without it the requester was recorded nowhere.
 * Null on every run that is not a fork, and on forks made before this migration.
 */
export class RunForkedBy1764980000002 implements MigrationInterface {
  name = 'RunForkedBy1764980000002';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" ADD "forked_by" text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" DROP COLUMN "forked_by"`);
  }
}
