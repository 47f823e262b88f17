import type { MigrationInterface, QueryRunner } from 'typeorm';

const UUID_RE = `'^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'`;

/** The webhook outbox trigger function (as migration 1765400000000 left it) with `tenant` the new events' tenant. */
const ENQUEUE = (tenant: string) => `
  CREATE OR REPLACE FUNCTION "webhook_enqueue"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO "webhook_delivery" ("tenant", "workspace", "webhook_id", "event_id", "run_id", "sequence", "event_type")
    SELECT ${tenant}, e."workspace", s."id", e."id", st."stream_id", e."sequence", "event_type_name"(e."code", e."type")
    FROM "webhook_new_events" e
    JOIN "event_stream" st ON st."key" = e."stream_key"
    JOIN "webhook_subscription" s
      ON s."tenant" = ${tenant}
     AND (s."workspace" IS NULL OR s."workspace" = e."workspace")
     AND "event_type_name"(e."code", e."type") = ANY (s."events")
    WHERE st."stream_id" <> 'host'
      AND (s."tags" IS NULL OR EXISTS (
        SELECT 1 FROM "run" r
        WHERE r."tenant" = ${tenant}
          AND r."id" = CASE WHEN st."stream_id" ~ ${UUID_RE} THEN st."stream_id"::uuid END
          AND jsonb_typeof(r."metadata"->'tags') = 'array'
          AND r."metadata"->'tags' ?| s."tags"))
      AND NOT EXISTS (
        SELECT 1 FROM "run" f
        WHERE f."tenant" = ${tenant}
          AND f."id" = CASE WHEN st."stream_id" ~ ${UUID_RE} THEN st."stream_id"::uuid END
          AND f."metadata"->'fork'->>'mode' = 'replay')
    ON CONFLICT ("webhook_id", "event_id") DO NOTHING;
    RETURN NULL;
  END
  $$`;

const TRIGGER = `CREATE TRIGGER "event_webhook_enqueue" AFTER INSERT ON "event" REFERENCING NEW TABLE AS "webhook_new_events" FOR EACH STATEMENT EXECUTE FUNCTION "webhook_enqueue"()`;
const TOOL_CALL_INDEX = `CREATE INDEX "event_tool_call_idx" ON "event" ("tenant", "created_at") WHERE "type" = 'agent.toolCalled'`;
const COLUMNS = `"stream_key", "sequence", "created_at", "id", "code", "tenant", "workspace", "type", "payload", "correlation_id", "causation_id", "node_id"`;
const TABLE = (name: string, tenant: string) =>
  `CREATE TABLE "${name}" (
    "stream_key" bigint NOT NULL, "sequence" bigint NOT NULL, "created_at" timestamptz NOT NULL DEFAULT now(), "id" uuid NOT NULL DEFAULT gen_random_uuid(), "code" smallint NOT NULL DEFAULT 0,
    "tenant" text${tenant}, "workspace" text, "type" text, "payload" json NOT NULL, "correlation_id" text, "causation_id" text, "node_id" text)`;

/**
 * An event keeps its tenant only when it is a tool call (issue 41: bytes per run). Every read finds
 * a stream's events by the key of the tenant's stream row (found by (tenant, stream_id)), the tenant
 * purge deletes the events of the tenant's streams, and the webhook outbox trigger takes the tenant
 * from the stream row it already joins; only the tool-call index and log look events up by tenant,
 * and only tool calls (`type` 'agent.toolCalled', which has no code). A null costs no byte of the row.
 *
 * The table is rewritten under its lock (a new table, copied in key order); `down` gives every event
 * its stream's tenant again.
 */
export class EventTenantOnToolCalls1765400010000 implements MigrationInterface {
  name = 'EventTenantOnToolCalls1765400010000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE "event_stream", "event" IN ACCESS EXCLUSIVE MODE`);
    await q.query(TABLE('event_lean', ''));
    await q.query(
      `INSERT INTO "event_lean" (${COLUMNS})
       SELECT e."stream_key", e."sequence", e."created_at", e."id", e."code", CASE WHEN e."type" = 'agent.toolCalled' THEN e."tenant" END, e."workspace", e."type", e."payload", e."correlation_id", e."causation_id", e."node_id"
       FROM "event" e ORDER BY e."stream_key", e."sequence"`,
    );
    await q.query(`DROP TABLE "event"`);
    await q.query(`ALTER TABLE "event_lean" RENAME TO "event"`);
    await q.query(`ALTER TABLE "event" ADD CONSTRAINT "event_stream_seq_uq" PRIMARY KEY ("stream_key", "sequence")`);
    await q.query(TOOL_CALL_INDEX);
    await q.query(ENQUEUE(`st."tenant"`));
    await q.query(TRIGGER);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE "event_stream", "event" IN ACCESS EXCLUSIVE MODE`);
    await q.query(TABLE('event_tenanted', ' NOT NULL'));
    await q.query(
      `INSERT INTO "event_tenanted" (${COLUMNS})
       SELECT e."stream_key", e."sequence", e."created_at", e."id", e."code", s."tenant", e."workspace", e."type", e."payload", e."correlation_id", e."causation_id", e."node_id"
       FROM "event" e JOIN "event_stream" s ON s."key" = e."stream_key" ORDER BY e."stream_key", e."sequence"`,
    );
    await q.query(`DROP TABLE "event"`);
    await q.query(`ALTER TABLE "event_tenanted" RENAME TO "event"`);
    await q.query(`ALTER TABLE "event" ADD CONSTRAINT "event_stream_seq_uq" PRIMARY KEY ("stream_key", "sequence")`);
    await q.query(TOOL_CALL_INDEX);
    await q.query(ENQUEUE(`e."tenant"`));
    await q.query(TRIGGER);
  }
}
