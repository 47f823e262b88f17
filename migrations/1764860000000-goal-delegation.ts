import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A goal's runs act for the principal that created the goal. The goal keeps the scopes that principal
 * held then and, for an API key, which key it was: each run gets those scopes only while that key
 * still holds them (revoked, expired or narrowed keys narrow the runs too). Goals created before this
 * migration keep none, as before.
 */
export class GoalDelegation1764860000000 implements MigrationInterface {
  name = 'GoalDelegation1764860000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "goal" ADD COLUMN IF NOT EXISTS "delegated_scopes" text array, ADD COLUMN IF NOT EXISTS "delegated_key_id" uuid`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "goal" DROP COLUMN IF EXISTS "delegated_key_id", DROP COLUMN IF EXISTS "delegated_scopes"`);
  }
}
