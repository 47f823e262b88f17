import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Replicas that cannot receive revocation notifications (the embedded engine) read the recently
 * revoked keys every second: a partial index over the revoked keys keeps that read small however
 * many keys a tenant holds.
 */
export class KeyRevocationIndex1764870000001 implements MigrationInterface {
  name = 'KeyRevocationIndex1764870000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS "api_key_revoked_idx" ON "api_key" ("revoked_at") WHERE "revoked_at" IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS "api_key_revoked_idx"`);
  }
}
