import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * SAML 2.0 sign-in (src/platform/identity/saml): the one-time messages of each identity provider
 * (AuthnRequest ids awaiting their response, assertion ids already consumed, kept until they expire),
 * the trust root a SCIM user links under (`scim_user.link_idp`), and the identity provider a console
 * session came from.
 */
export class Saml1765100060000 implements MigrationInterface {
  name = 'Saml1765100060000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "saml_message" ("id" text NOT NULL, "kind" text NOT NULL, "idp" text NOT NULL, "value" text NOT NULL DEFAULT '', "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_8b2d09fdadce12f688488732670" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX IF NOT EXISTS "saml_message_expires_idx" ON "saml_message" ("expires_at")`);
    await q.query(`ALTER TABLE "scim_user" ADD COLUMN IF NOT EXISTS "link_idp" text`);
    await q.query(`CREATE INDEX IF NOT EXISTS "scim_user_link_idx" ON "scim_user" ("tenant", "link_idp", "external_id")`);
    await q.query(`ALTER TABLE "console_session" ADD COLUMN IF NOT EXISTS "issuer" text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "console_session" DROP COLUMN "issuer"`);
    await q.query(`DROP INDEX "scim_user_link_idx"`);
    await q.query(`ALTER TABLE "scim_user" DROP COLUMN "link_idp"`);
    await q.query(`DROP TABLE "saml_message"`);
  }
}
