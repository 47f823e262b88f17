import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `GET /v1/keys` (oldest first, by `created_at` then `id`) in O(page): `api_key_tenant_idx` (tenant,
 * created_at) lacked the primary key, so keys created in one statement (one `now()`) were a tie group
 * sorted whole; the new index starts with the same columns and replaces it (as in migration
 * 1765000000600). `CREATE INDEX` blocks writes to `api_key` until the migration commits: a small table.
 */
export class ApiKeyListIndex1765000000601 implements MigrationInterface {
  name = 'ApiKeyListIndex1765000000601';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS "api_key_tenant_created_idx" ON "api_key" ("tenant", "created_at", "id")`);
    await q.query(`DROP INDEX IF EXISTS "api_key_tenant_idx"`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX "api_key_tenant_idx" ON "api_key" ("tenant", "created_at")`);
    await q.query(`DROP INDEX "api_key_tenant_created_idx"`);
  }
}
