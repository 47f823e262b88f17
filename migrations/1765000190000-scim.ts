import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * SCIM 2.0 provisioning (src/platform/identity/scim): the users and groups an identity provider
 * provisions per tenant. Users deleted over SCIM stay as tombstones (`deleted_at`) so their tokens
 * keep being refused.
 */
export class Scim1765000190000 implements MigrationInterface {
  name = 'Scim1765000190000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "scim_user" ("tenant" text NOT NULL, "id" uuid NOT NULL DEFAULT gen_random_uuid(), "user_name" text NOT NULL, "external_id" text, "active" boolean NOT NULL DEFAULT true, "attributes" jsonb NOT NULL DEFAULT '{}', "version" integer NOT NULL DEFAULT '1', "deleted_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_d67f8a1c694add8068e9ba25809" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX IF NOT EXISTS "scim_user_external_idx" ON "scim_user" ("tenant", "external_id")`);
    await q.query(`CREATE INDEX IF NOT EXISTS "scim_user_name_idx" ON "scim_user" ("tenant", "user_name")`);
    await q.query(`CREATE TABLE IF NOT EXISTS "scim_group" ("tenant" text NOT NULL, "id" uuid NOT NULL DEFAULT gen_random_uuid(), "display_name" text NOT NULL, "external_id" text, "members" uuid array NOT NULL DEFAULT '{}', "version" integer NOT NULL DEFAULT '1', "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_7c1aa55b2b5914cb8c22ca5f800" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX IF NOT EXISTS "scim_group_name_idx" ON "scim_group" ("tenant", "display_name")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "scim_group"`);
    await q.query(`DROP TABLE "scim_user"`);
  }
}
