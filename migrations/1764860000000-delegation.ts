import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Standing work acts for the principal that set it up: a goal's runs for its creator, an automation's
 * runs for its installer. Each keeps the scopes that principal held then and, for an API key, which key
 * it was: every run gets those scopes only while that key still holds them (revoked, expired or
 * narrowed keys narrow the runs too). Rows from before this migration keep none, as before.
 */
export class Delegation1764860000000 implements MigrationInterface {
  name = 'Delegation1764860000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "goal" ADD COLUMN IF NOT EXISTS "delegated_scopes" text array, ADD COLUMN IF NOT EXISTS "delegated_key_id" uuid`);
    await q.query(`ALTER TABLE "automation_schedule" ADD COLUMN IF NOT EXISTS "delegated_scopes" text array, ADD COLUMN IF NOT EXISTS "delegated_key_id" uuid`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "automation_schedule" DROP COLUMN IF EXISTS "delegated_key_id", DROP COLUMN IF EXISTS "delegated_scopes"`);
    await q.query(`ALTER TABLE "goal" DROP COLUMN IF EXISTS "delegated_key_id", DROP COLUMN IF EXISTS "delegated_scopes"`);
  }
}
