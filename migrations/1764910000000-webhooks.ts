import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhooks (webhooks.md): subscriptions and the delivery outbox. The outbox is filled by a
 * statement-level trigger on "event": the deliveries of the events a statement appends are written
 * by that same statement, in the appender's transaction, with one join against the tenant's
 * subscriptions (nothing when it has none). A committed event therefore always has its deliveries,
 * and the run engine never waits for a receiver. Only run streams are delivered (not the host stream).
 * Tag filters match the run's `metadata.tags` (RunOptions.tags).
 */
export class Webhooks1764910000000 implements MigrationInterface {
  name = 'Webhooks1764910000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "webhook_subscription" ("id" text NOT NULL, "tenant" text NOT NULL, "workspace" text, "principal" text NOT NULL, "url" text NOT NULL, "events" text array NOT NULL, "tags" text array, "secret_ref" uuid NOT NULL, "secret_fingerprint" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_b52cb4811c5ada4f42896c37ba8" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX "webhook_subscription_tenant_idx" ON "webhook_subscription" ("tenant", "created_at")`);
    await q.query(`CREATE TABLE "webhook_delivery" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "tenant" text NOT NULL, "workspace" text, "webhook_id" text NOT NULL, "event_id" uuid NOT NULL, "run_id" text NOT NULL, "sequence" bigint NOT NULL, "event_type" text NOT NULL, "status" text NOT NULL DEFAULT 'pending', "attempts" integer NOT NULL DEFAULT '0', "next_attempt_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "last_status_code" integer, "last_error" text, "delivered_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_b1ae290239a778f12399db91354" PRIMARY KEY ("id"))`);
    await q.query(`CREATE UNIQUE INDEX "webhook_delivery_event_uq" ON "webhook_delivery" ("webhook_id", "event_id")`);
    await q.query(`CREATE INDEX "webhook_delivery_history_idx" ON "webhook_delivery" ("tenant", "webhook_id", "created_at")`);
    await q.query(`CREATE INDEX "webhook_delivery_due_idx" ON "webhook_delivery" ("next_attempt_at") WHERE "status" IN ('pending', 'delivering')`);
    await q.query(`ALTER TABLE "webhook_delivery" ADD CONSTRAINT "FK_ef25cc28dcf88ea3dd81f39af2d" FOREIGN KEY ("webhook_id") REFERENCES "webhook_subscription"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
    await q.query(`
      CREATE OR REPLACE FUNCTION "webhook_enqueue"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO "webhook_delivery" ("tenant", "workspace", "webhook_id", "event_id", "run_id", "sequence", "event_type")
        SELECT e."tenant", e."workspace", s."id", e."id", e."stream_id", e."sequence", e."type"
        FROM "webhook_new_events" e
        JOIN "webhook_subscription" s
          ON s."tenant" = e."tenant"
         AND (s."workspace" IS NULL OR s."workspace" = e."workspace")
         AND e."type" = ANY (s."events")
        WHERE e."stream_id" <> 'host'
          AND (s."tags" IS NULL OR EXISTS (
            SELECT 1 FROM "run" r
            WHERE r."tenant" = e."tenant"
              AND r."id" = CASE WHEN e."stream_id" ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' THEN e."stream_id"::uuid END
              AND jsonb_typeof(r."metadata"->'tags') = 'array'
              AND r."metadata"->'tags' ?| s."tags"))
        ON CONFLICT ("webhook_id", "event_id") DO NOTHING;
        RETURN NULL;
      END
      $$`);
    await q.query(`CREATE TRIGGER "event_webhook_enqueue" AFTER INSERT ON "event" REFERENCING NEW TABLE AS "webhook_new_events" FOR EACH STATEMENT EXECUTE FUNCTION "webhook_enqueue"()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER IF EXISTS "event_webhook_enqueue" ON "event"`);
    await q.query(`DROP FUNCTION IF EXISTS "webhook_enqueue"()`);
    await q.query(`DROP TABLE "webhook_delivery"`);
    await q.query(`DROP TABLE "webhook_subscription"`);
  }
}
