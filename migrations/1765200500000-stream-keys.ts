import type { MigrationInterface, QueryRunner } from 'typeorm';

const UUID_RE = `'^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'`;

/**
 * The webhook outbox trigger function (migrations 1764910000000, 1764930000000) over events whose
 * stream is `stream` (an expression of `e`, the new events, and whatever `join` adds).
 */
const ENQUEUE = (stream: string, join: string) => `
  CREATE OR REPLACE FUNCTION "webhook_enqueue"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO "webhook_delivery" ("tenant", "workspace", "webhook_id", "event_id", "run_id", "sequence", "event_type")
    SELECT e."tenant", e."workspace", s."id", e."id", ${stream}, e."sequence", e."type"
    FROM "webhook_new_events" e${join}
    JOIN "webhook_subscription" s
      ON s."tenant" = e."tenant"
     AND (s."workspace" IS NULL OR s."workspace" = e."workspace")
     AND e."type" = ANY (s."events")
    WHERE ${stream} <> 'host'
      AND (s."tags" IS NULL OR EXISTS (
        SELECT 1 FROM "run" r
        WHERE r."tenant" = e."tenant"
          AND r."id" = CASE WHEN ${stream} ~ ${UUID_RE} THEN ${stream}::uuid END
          AND jsonb_typeof(r."metadata"->'tags') = 'array'
          AND r."metadata"->'tags' ?| s."tags"))
      AND NOT EXISTS (
        SELECT 1 FROM "run" f
        WHERE f."tenant" = e."tenant"
          AND f."id" = CASE WHEN ${stream} ~ ${UUID_RE} THEN ${stream}::uuid END
          AND f."metadata"->'fork'->>'mode' = 'replay')
    ON CONFLICT ("webhook_id", "event_id") DO NOTHING;
    RETURN NULL;
  END
  $$`;

const TRIGGER = `CREATE TRIGGER "event_webhook_enqueue" AFTER INSERT ON "event" REFERENCING NEW TABLE AS "webhook_new_events" FOR EACH STATEMENT EXECUTE FUNCTION "webhook_enqueue"()`;
const TOOL_CALL_INDEX = `CREATE INDEX "event_tool_call_idx" ON "event" ("tenant", "created_at") WHERE "type" = 'agent.toolCalled'`;

/**
 * Streams keyed by a number (issue 41: bytes per run). A stream's counter row (`event_stream`) gets
 * a bigint `key`, drawn from a sequence when the stream is first appended to, and an event stores
 * that key instead of its tenant and stream id as the start of its primary key: the key entry of an
 * event is (stream_key, sequence), 16 bytes instead of the tenant's and the run id's text (about 64),
 * and since a new stream's key is the highest yet, a run's entries are appended at the index's end
 * (full pages) where a random run id landed anywhere (pages about 65% full). The event keeps its
 * tenant (the tool-call index, the tenant purge, a second check on every read) but no longer the
 * stream id's text: readers find the stream row by (tenant, stream_id), its primary key, then its
 * events by the key. The columns are ordered widest-aligned first, so a row has no alignment padding.
 * The table is rewritten under its lock (a new table, copied in key order); streams that had events
 * but no counter row (none the host wrote) get one first, so no event is lost. `down` gives the
 * rows back as they were.
 */
export class StreamKeys1765200500000 implements MigrationInterface {
  name = 'StreamKeys1765200500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE "event_stream", "event" IN ACCESS EXCLUSIVE MODE`);
    await q.query(
      `INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") SELECT "tenant", "stream_id", max("sequence") FROM "event" GROUP BY 1, 2 ON CONFLICT ("tenant", "stream_id") DO NOTHING`,
    );
    await q.query(`CREATE SEQUENCE "event_stream_key_seq" AS bigint OWNED BY NONE`);
    await q.query(`ALTER TABLE "event_stream" ADD COLUMN "key" bigint`);
    await q.query(`UPDATE "event_stream" s SET "key" = o."key" FROM (SELECT "tenant", "stream_id", nextval('"event_stream_key_seq"') AS "key" FROM (SELECT "tenant", "stream_id" FROM "event_stream" ORDER BY "tenant", "stream_id") x) o WHERE o."tenant" = s."tenant" AND o."stream_id" = s."stream_id"`);
    await q.query(`ALTER TABLE "event_stream" ALTER COLUMN "key" SET DEFAULT nextval('"event_stream_key_seq"'), ALTER COLUMN "key" SET NOT NULL`);
    await q.query(`ALTER SEQUENCE "event_stream_key_seq" OWNED BY "event_stream"."key"`);
    await q.query(`CREATE UNIQUE INDEX "event_stream_key_uq" ON "event_stream" ("key")`);
    await q.query(
      `CREATE TABLE "event_keyed" (
        "stream_key" bigint NOT NULL, "sequence" bigint NOT NULL, "created_at" timestamptz NOT NULL DEFAULT now(), "id" uuid NOT NULL DEFAULT gen_random_uuid(),
        "tenant" text NOT NULL, "workspace" text, "type" text NOT NULL, "payload" json NOT NULL, "correlation_id" text, "causation_id" text, "node_id" text)`,
    );
    await q.query(
      `INSERT INTO "event_keyed" ("stream_key", "sequence", "created_at", "id", "tenant", "workspace", "type", "payload", "correlation_id", "causation_id", "node_id")
       SELECT s."key", e."sequence", e."created_at", e."id", e."tenant", e."workspace", e."type", e."payload", e."correlation_id", e."causation_id", e."node_id"
       FROM "event" e JOIN "event_stream" s ON s."tenant" = e."tenant" AND s."stream_id" = e."stream_id" ORDER BY s."key", e."sequence"`,
    );
    await q.query(`DROP TABLE "event"`);
    await q.query(`ALTER TABLE "event_keyed" RENAME TO "event"`);
    await q.query(`ALTER TABLE "event" ADD CONSTRAINT "event_stream_seq_uq" PRIMARY KEY ("stream_key", "sequence")`);
    await q.query(TOOL_CALL_INDEX);
    await q.query(ENQUEUE(`st."stream_id"`, `\n    JOIN "event_stream" st ON st."key" = e."stream_key"`));
    await q.query(TRIGGER);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE "event_stream", "event" IN ACCESS EXCLUSIVE MODE`);
    await q.query(
      `CREATE TABLE "event_texted" (
        "id" uuid NOT NULL DEFAULT gen_random_uuid(), "tenant" text NOT NULL, "workspace" text, "stream_id" text NOT NULL, "sequence" bigint NOT NULL, "type" text NOT NULL,
        "payload" json NOT NULL, "correlation_id" text, "causation_id" text, "node_id" text, "created_at" timestamptz NOT NULL DEFAULT now())`,
    );
    await q.query(
      `INSERT INTO "event_texted" ("id", "tenant", "workspace", "stream_id", "sequence", "type", "payload", "correlation_id", "causation_id", "node_id", "created_at")
       SELECT e."id", e."tenant", e."workspace", s."stream_id", e."sequence", e."type", e."payload", e."correlation_id", e."causation_id", e."node_id", e."created_at"
       FROM "event" e JOIN "event_stream" s ON s."key" = e."stream_key" ORDER BY s."tenant", s."stream_id", e."sequence"`,
    );
    await q.query(`DROP TABLE "event"`);
    await q.query(`ALTER TABLE "event_texted" RENAME TO "event"`);
    await q.query(`ALTER TABLE "event" ADD CONSTRAINT "event_stream_seq_uq" PRIMARY KEY ("tenant", "stream_id", "sequence")`);
    await q.query(TOOL_CALL_INDEX);
    await q.query(ENQUEUE(`e."stream_id"`, ''));
    await q.query(TRIGGER);
    await q.query(`ALTER TABLE "event_stream" DROP COLUMN "key"`);
  }
}
