import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * OAuth connections (RFC 0047): authorizations in flight (a hashed `state`, the sealed PKCE verifier, who started
 * it, until when it may come back) and the grants they produced (per connection and principal, the token set sealed
 * in the credential store, its scopes and expiry). No token, code or verifier is ever stored in clear.
 */
export class OAuth1765000210000 implements MigrationInterface {
  name = 'OAuth1765000210000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "oauth_authorization" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "tenant" text NOT NULL, "state_hash" text NOT NULL, "connection_id" uuid NOT NULL, "principal" text NOT NULL, "shared" boolean NOT NULL DEFAULT false, "verifier_credential_id" uuid NOT NULL, "scopes" text array NOT NULL, "redirect_uri" text NOT NULL, "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_d9fdf61cf43ea0aea8b1be0c704" PRIMARY KEY ("id"))`);
    await q.query(`CREATE UNIQUE INDEX "oauth_authorization_state_uq" ON "oauth_authorization" ("state_hash")`);
    await q.query(`CREATE TABLE "oauth_grant" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "tenant" text NOT NULL, "connection_id" uuid NOT NULL, "principal" text NOT NULL, "credential_id" uuid NOT NULL, "scopes" text array NOT NULL, "expires_at" TIMESTAMP WITH TIME ZONE, "status" text NOT NULL DEFAULT 'active', "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_7ef975b60977497b796babe82ca" PRIMARY KEY ("id"))`);
    await q.query(`CREATE UNIQUE INDEX "oauth_grant_principal_uq" ON "oauth_grant" ("tenant", "connection_id", "principal")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "oauth_grant"`);
    await q.query(`DROP TABLE "oauth_authorization"`);
  }
}
