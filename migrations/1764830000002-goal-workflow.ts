import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The workflow (chain) a standing goal's runs execute, handed to its worker with every iteration. */
export class GoalWorkflow1764830000002 implements MigrationInterface {
  name = 'GoalWorkflow1764830000002';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "goal" ADD "workflow_id" text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "goal" DROP COLUMN "workflow_id"`);
  }
}
