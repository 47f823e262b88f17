import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The webhook outbox trigger function of migration 1764910000000, without the clause this migration adds. */
const ENQUEUE = (replayClause: string) => `
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
          AND r."metadata"->'tags' ?| s."tags"))${replayClause}
    ON CONFLICT ("webhook_id", "event_id") DO NOTHING;
    RETURN NULL;
  END
  $$`;

/**
 * replay.md §"Host-initiated fan-out is an external effect": the events of a `replay` fork
 * (POST /v1/runs/{runId}:fork, lineage in `run.metadata.fork`) re-state history that already
 * happened, so no webhook delivers them. Replay-ness is read from the run, never from the event
 * type. The check runs only for events some subscription wants (after the join). `branch` forks
 * are new executions and are delivered as usual.
 */
export class ReplayForkFanout1764930000000 implements MigrationInterface {
  name = 'ReplayForkFanout1764930000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      ENQUEUE(`
      AND NOT EXISTS (
        SELECT 1 FROM "run" f
        WHERE f."tenant" = e."tenant"
          AND f."id" = CASE WHEN e."stream_id" ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' THEN e."stream_id"::uuid END
          AND f."metadata"->'fork'->>'mode' = 'replay')`),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(ENQUEUE(''));
  }
}
