import type { MigrationInterface, QueryRunner } from 'typeorm';

/** API keys, runs and the event log, the pack registry, the periodic-task leases and the plugin key-value store. */
export class Platform1764680000000 implements MigrationInterface {
  name = 'Platform1764680000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "api_key" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "lookup_id" text NOT NULL, "secret_hash" text NOT NULL, "tenant" text NOT NULL, "workspace" text, "principal" text NOT NULL, "name" text, "scopes" text array NOT NULL DEFAULT '{}', "roles" text array NOT NULL DEFAULT '{}', "expires_at" TIMESTAMP WITH TIME ZONE, "revoked_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_b1bd840641b8acbaad89c3d8d11" PRIMARY KEY ("id"))`);
    await q.query(`CREATE UNIQUE INDEX "api_key_lookup_uq" ON "api_key" ("lookup_id")`);
    await q.query(`CREATE INDEX "api_key_tenant_idx" ON "api_key" ("tenant", "created_at")`);
    await q.query(`CREATE TABLE "run" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "tenant" text NOT NULL, "workspace" text, "principal" text, "kind" text NOT NULL, "status" text NOT NULL DEFAULT 'running', "metadata" jsonb NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_804c38ffba92002c6d2c646dd46" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX "run_tenant_idx" ON "run" ("tenant", "created_at")`);
    await q.query(`CREATE TABLE "event_stream" ("tenant" text NOT NULL, "stream_id" text NOT NULL, "last_sequence" bigint NOT NULL DEFAULT '0', CONSTRAINT "PK_21c4e341542bdc67d6a0bffc6e5" PRIMARY KEY ("tenant", "stream_id"))`);
    await q.query(`CREATE TABLE "event" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "tenant" text NOT NULL, "workspace" text, "stream_id" text NOT NULL, "sequence" bigint NOT NULL, "type" text NOT NULL, "payload" jsonb NOT NULL, "correlation_id" text, "causation_id" text, "node_id" text, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_30c2f3bbaf6d34a55f8ae6e4614" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX "event_tenant_type_idx" ON "event" ("tenant", "type", "created_at")`);
    await q.query(`CREATE UNIQUE INDEX "event_stream_seq_uq" ON "event" ("tenant", "stream_id", "sequence")`);
    await q.query(`CREATE TABLE "installed_artifact" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "tenant" text NOT NULL, "workspace_key" text NOT NULL DEFAULT '', "kind" text NOT NULL, "name" text NOT NULL, "version" text, "ref" text NOT NULL, "bytes" text NOT NULL, "content" jsonb NOT NULL, "origin" text NOT NULL, "installed_by" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_9e57038c4aec2754f9a18839a2b" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX "installed_artifact_kind_idx" ON "installed_artifact" ("tenant", "kind")`);
    await q.query(`CREATE UNIQUE INDEX "installed_artifact_name_uq" ON "installed_artifact" ("tenant", "workspace_key", "kind", "name")`);
    await q.query(`CREATE TABLE "scheduled_task" ("name" text NOT NULL, "interval_ms" integer NOT NULL, "next_run_at" TIMESTAMP WITH TIME ZONE NOT NULL, "lease_owner" text, "lease_expires_at" TIMESTAMP WITH TIME ZONE, "last_run_at" TIMESTAMP WITH TIME ZONE, "last_error" text, CONSTRAINT "PK_d83e0fe52ade6e88fb3558b4a57" PRIMARY KEY ("name"))`);
    await q.query(`CREATE TABLE "plugin_state" ("tenant" text NOT NULL, "plugin_id" text NOT NULL, "key" text NOT NULL, "value" jsonb NOT NULL, "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_2b171e0c1a0068cf7fe6d308e47" PRIMARY KEY ("tenant", "plugin_id", "key"))`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of ['plugin_state', 'scheduled_task', 'installed_artifact', 'event', 'event_stream', 'run', 'api_key']) await q.query(`DROP TABLE "${t}"`);
  }
}
