import type { MigrationInterface, QueryRunner } from 'typeorm';

const UUID_RE = `'^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'`;

/** The webhook outbox trigger function (as migration 1765200500000 left it) with `type` the new events' type name. */
const ENQUEUE = (type: string) => `
  CREATE OR REPLACE FUNCTION "webhook_enqueue"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO "webhook_delivery" ("tenant", "workspace", "webhook_id", "event_id", "run_id", "sequence", "event_type")
    SELECT e."tenant", e."workspace", s."id", e."id", st."stream_id", e."sequence", ${type}
    FROM "webhook_new_events" e
    JOIN "event_stream" st ON st."key" = e."stream_key"
    JOIN "webhook_subscription" s
      ON s."tenant" = e."tenant"
     AND (s."workspace" IS NULL OR s."workspace" = e."workspace")
     AND ${type} = ANY (s."events")
    WHERE st."stream_id" <> 'host'
      AND (s."tags" IS NULL OR EXISTS (
        SELECT 1 FROM "run" r
        WHERE r."tenant" = e."tenant"
          AND r."id" = CASE WHEN st."stream_id" ~ ${UUID_RE} THEN st."stream_id"::uuid END
          AND jsonb_typeof(r."metadata"->'tags') = 'array'
          AND r."metadata"->'tags' ?| s."tags"))
      AND NOT EXISTS (
        SELECT 1 FROM "run" f
        WHERE f."tenant" = e."tenant"
          AND f."id" = CASE WHEN st."stream_id" ~ ${UUID_RE} THEN st."stream_id"::uuid END
          AND f."metadata"->'fork'->>'mode' = 'replay')
    ON CONFLICT ("webhook_id", "event_id") DO NOTHING;
    RETURN NULL;
  END
  $$`;

const TRIGGER = `CREATE TRIGGER "event_webhook_enqueue" AFTER INSERT ON "event" REFERENCING NEW TABLE AS "webhook_new_events" FOR EACH STATEMENT EXECUTE FUNCTION "webhook_enqueue"()`;
const TOOL_CALL_INDEX = `CREATE INDEX "event_tool_call_idx" ON "event" ("tenant", "created_at") WHERE "type" = 'agent.toolCalled'`;

/**
 * The codes as this migration defines them (src/platform/events/event-codes.ts holds the same list:
 * a test compares them). A later code gets a migration of its own that redefines event_type_name.
 */
export const MIGRATION_EVENT_TYPE_CODES = ['', 'run.started', 'run.completed', 'run.failed', 'run.cancelled', 'run.paused', 'run.resumed', 'node.started', 'node.completed', 'node.failed', 'node.suspended', 'node.retried', 'node.skipped', 'node.cancelled', 'node.resumed'];
const NODE_ID_LEFT_OUT = 1024;
const TYPE_NAME_BODY = `SELECT COALESCE($2, CASE $1 & ${NODE_ID_LEFT_OUT - 1} ${MIGRATION_EVENT_TYPE_CODES.map((n, i) => (n ? `WHEN ${i} THEN '${n}'` : '')).filter(Boolean).join(' ')} END)`;

/** The code of each coded type, as SQL (`t` the type's text). */
const CODE_OF = (t: string) => `CASE ${t} ${MIGRATION_EVENT_TYPE_CODES.map((n, i) => (n ? `WHEN '${n}' THEN ${i}` : '')).filter(Boolean).join(' ')} ELSE 0 END`;
/** The JSON text that starts an event's payload with its node id, as the host writes it (JSON.stringify: no spaces). */
const NODE_PREFIX = `'{"nodeId":' || to_json(e."node_id")::text`;

/**
 * Event types as numbers (issue 41: bytes per run). The run engine's own event types (run.* and
 * node.*, src/platform/events/event-codes.ts) are stored as a 2-byte `code` instead of their text;
 * any other type keeps its text in `type` (code 0), so the tool-call index and everything that
 * looks for another type by its text are unchanged. A coded event whose payload starts with a
 * `nodeId` equal to its own `node_id` (every node event the engine writes) is stored without that
 * key, flagged in `code` (NODE_ID_LEFT_OUT): readers put it back first, so payloads come back as
 * written. `event_type_name(code, type)` gives the type's text in SQL (the webhook outbox trigger).
 * Together about 20 bytes less per event.
 *
 * The table is rewritten under its lock (a new table, copied in key order, `code` placed after `id`
 * so a row has no alignment padding); `down` gives every row back as it was.
 */
export class EventTypeCodes1765400000000 implements MigrationInterface {
  name = 'EventTypeCodes1765400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE "event_stream", "event" IN ACCESS EXCLUSIVE MODE`);
    await q.query(`CREATE FUNCTION "event_type_name"(smallint, text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ ${TYPE_NAME_BODY} $$`);
    await q.query(
      `CREATE TABLE "event_coded" (
        "stream_key" bigint NOT NULL, "sequence" bigint NOT NULL, "created_at" timestamptz NOT NULL DEFAULT now(), "id" uuid NOT NULL DEFAULT gen_random_uuid(), "code" smallint NOT NULL DEFAULT 0,
        "tenant" text NOT NULL, "workspace" text, "type" text, "payload" json NOT NULL, "correlation_id" text, "causation_id" text, "node_id" text)`,
    );
    // A payload is left without its nodeId only when its text starts with exactly what the host writes.
    await q.query(
      `INSERT INTO "event_coded" ("stream_key", "sequence", "created_at", "id", "code", "tenant", "workspace", "type", "payload", "correlation_id", "causation_id", "node_id")
       SELECT e."stream_key", e."sequence", e."created_at", e."id", x."code" + CASE WHEN x."strip" THEN ${NODE_ID_LEFT_OUT} ELSE 0 END, e."tenant", e."workspace",
         CASE WHEN x."code" = 0 THEN e."type" END,
         CASE WHEN x."strip" THEN ('{' || substr(e."payload"::text, length(${NODE_PREFIX}) + CASE WHEN substr(e."payload"::text, length(${NODE_PREFIX}) + 1, 1) = ',' THEN 2 ELSE 1 END))::json ELSE e."payload" END,
         e."correlation_id", e."causation_id", e."node_id"
       FROM "event" e
       CROSS JOIN LATERAL (SELECT ${CODE_OF('e."type"')} AS "code") c
       CROSS JOIN LATERAL (SELECT c."code", c."code" > 0 AND e."node_id" IS NOT NULL AND left(e."payload"::text, length(${NODE_PREFIX}) + 1) IN (${NODE_PREFIX} || ',', ${NODE_PREFIX} || '}') AS "strip") x
       ORDER BY e."stream_key", e."sequence"`,
    );
    await q.query(`DROP TABLE "event"`);
    await q.query(`ALTER TABLE "event_coded" RENAME TO "event"`);
    await q.query(`ALTER TABLE "event" ADD CONSTRAINT "event_stream_seq_uq" PRIMARY KEY ("stream_key", "sequence")`);
    await q.query(TOOL_CALL_INDEX);
    await q.query(ENQUEUE(`"event_type_name"(e."code", e."type")`));
    await q.query(TRIGGER);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE "event_stream", "event" IN ACCESS EXCLUSIVE MODE`);
    await q.query(
      `CREATE TABLE "event_texted" (
        "stream_key" bigint NOT NULL, "sequence" bigint NOT NULL, "created_at" timestamptz NOT NULL DEFAULT now(), "id" uuid NOT NULL DEFAULT gen_random_uuid(),
        "tenant" text NOT NULL, "workspace" text, "type" text NOT NULL, "payload" json NOT NULL, "correlation_id" text, "causation_id" text, "node_id" text)`,
    );
    await q.query(
      `INSERT INTO "event_texted" ("stream_key", "sequence", "created_at", "id", "tenant", "workspace", "type", "payload", "correlation_id", "causation_id", "node_id")
       SELECT e."stream_key", e."sequence", e."created_at", e."id", e."tenant", e."workspace", "event_type_name"(e."code", e."type"),
         CASE WHEN e."code" & ${NODE_ID_LEFT_OUT} <> 0 THEN (${NODE_PREFIX} || CASE WHEN e."payload"::text = '{}' THEN '}' ELSE ',' || substr(e."payload"::text, 2) END)::json ELSE e."payload" END,
         e."correlation_id", e."causation_id", e."node_id"
       FROM "event" e ORDER BY e."stream_key", e."sequence"`,
    );
    await q.query(`DROP TABLE "event"`);
    await q.query(`ALTER TABLE "event_texted" RENAME TO "event"`);
    await q.query(`ALTER TABLE "event" ADD CONSTRAINT "event_stream_seq_uq" PRIMARY KEY ("stream_key", "sequence")`);
    await q.query(TOOL_CALL_INDEX);
    await q.query(ENQUEUE(`e."type"`));
    await q.query(TRIGGER);
    await q.query(`DROP FUNCTION "event_type_name"(smallint, text)`);
  }
}
