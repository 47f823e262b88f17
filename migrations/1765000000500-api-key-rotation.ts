import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * API-key rotation (openwop-auth-api-key-rotation): a rotated key names its successor and when it was
 * rotated (its `expires_at` becomes the end of the overlap), the successor names the key it replaced,
 * and `rotation_used_at` records the first use of either after the rotation (the `key.used` audit entry).
 */
export class ApiKeyRotation1765000000500 implements MigrationInterface {
  name = 'ApiKeyRotation1765000000500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "api_key" ADD "rotated_at" TIMESTAMP WITH TIME ZONE`);
    await q.query(`ALTER TABLE "api_key" ADD "rotated_to" uuid`);
    await q.query(`ALTER TABLE "api_key" ADD "rotated_from" uuid`);
    await q.query(`ALTER TABLE "api_key" ADD "rotation_used_at" TIMESTAMP WITH TIME ZONE`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "api_key" DROP COLUMN "rotation_used_at"`);
    await q.query(`ALTER TABLE "api_key" DROP COLUMN "rotated_from"`);
    await q.query(`ALTER TABLE "api_key" DROP COLUMN "rotated_to"`);
    await q.query(`ALTER TABLE "api_key" DROP COLUMN "rotated_at"`);
  }
}
