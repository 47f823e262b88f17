import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Connections (RFC 0095/0046): provider claims of installed connection packs, connections, the credential store. */
export class Connections1764700000000 implements MigrationInterface {
  name = 'Connections1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "connection" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "tenant" text NOT NULL, "name" text NOT NULL, "provider_id" text NOT NULL, "credential_id" uuid, "origin" text NOT NULL DEFAULT 'api', "created_by" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_be611ce8b8cf439091c82a334b2" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX "connection_provider_idx" ON "connection" ("tenant", "provider_id")`);
    await q.query(`CREATE UNIQUE INDEX "connection_name_uq" ON "connection" ("tenant", "name")`);
    await q.query(`CREATE TABLE "credential" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "tenant" text NOT NULL, "key_provider" text NOT NULL, "key_id" text NOT NULL, "sealed" bytea NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_3a5169bcd3d5463cefeec78be82" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX "credential_tenant_key_idx" ON "credential" ("tenant", "key_id")`);
    await q.query(`CREATE TABLE "connection_provider_claim" ("tenant" text NOT NULL, "provider_id" text NOT NULL, "pack_name" text NOT NULL, "workspace_key" text NOT NULL DEFAULT '', "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_8a997b660583c8a690a1b243390" PRIMARY KEY ("tenant", "provider_id"))`);
    await q.query(`CREATE INDEX "connection_provider_claim_pack_idx" ON "connection_provider_claim" ("tenant", "pack_name")`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of ['connection_provider_claim', 'credential', 'connection']) await q.query(`DROP TABLE "${t}"`);
  }
}
