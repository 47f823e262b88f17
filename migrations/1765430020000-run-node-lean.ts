import type { MigrationInterface, QueryRunner } from 'typeorm';

const STATUSES = ['running', 'waiting', 'completed', 'failed', 'skipped', 'cancelled'];

/**
 * A node row is 88 bytes where it was 112 (issue 41: bytes per run):
 * - no `type_id`: a node's type is its run's stored definition's (`run.definition_hash`), which every
 *   reader of node rows has with the run (the engine's claim, the snapshot's variables); no reader
 *   took it from the row;
 * - `status` is an enum (`run_node_status`, 4 bytes) instead of its name as text (up to 10): SQL and
 *   the driver still read and write the names;
 * - the table is built anew, so its rows have 8 columns: a row with a null and more than 8 columns
 *   (dropped ones count: `tenant`, migration 1765420000000) has a 32-byte header, 24 otherwise.
 *
 * The rows are copied into the new table in key order, then it takes the old one's name and key: the
 * table is locked for the copy (2.2 s for 100,000 runs, 300,000 node rows, in docs/operations.md).
 * `down` builds the old shape again and takes each row's type from its run's definition.
 */
export class RunNodeLean1765430020000 implements MigrationInterface {
  name = 'RunNodeLean1765430020000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TYPE "run_node_status" AS ENUM (${STATUSES.map((s) => `'${s}'`).join(', ')})`);
    await q.query(`CREATE TABLE "run_node_lean" ("run_id" uuid NOT NULL, "node_id" text NOT NULL, "status" "run_node_status" NOT NULL, "attempt" integer NOT NULL DEFAULT '0',
      "outputs" jsonb, "error" jsonb, "gate_id" uuid, "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now())`);
    await q.query(`INSERT INTO "run_node_lean" ("run_id", "node_id", "status", "attempt", "outputs", "error", "gate_id", "updated_at")
      SELECT "run_id", "node_id", "status"::"run_node_status", "attempt", "outputs", "error", "gate_id", "updated_at" FROM "run_node" ORDER BY "run_id", "node_id"`);
    await q.query(`DROP TABLE "run_node"`);
    await q.query(`ALTER TABLE "run_node_lean" RENAME TO "run_node"`);
    await q.query(`ALTER TABLE "run_node" ADD CONSTRAINT "PK_run_node" PRIMARY KEY ("run_id", "node_id")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "run_node_wide" ("run_id" uuid NOT NULL, "node_id" text NOT NULL, "type_id" text NOT NULL, "status" text NOT NULL, "attempt" integer NOT NULL DEFAULT '0',
      "outputs" jsonb, "error" jsonb, "gate_id" uuid, "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now())`);
    // A node's type from its run's definition; a node the definition does not name (none should be) keeps an empty one.
    await q.query(`INSERT INTO "run_node_wide" ("run_id", "node_id", "type_id", "status", "attempt", "outputs", "error", "gate_id", "updated_at")
      SELECT n."run_id", n."node_id", coalesce((SELECT x->>'typeId' FROM "run" r JOIN "run_definition" d ON d."tenant" = r."tenant" AND d."hash" = r."definition_hash",
          jsonb_array_elements(d."definition"->'nodes') x WHERE r."id" = n."run_id" AND x->>'id' = n."node_id" LIMIT 1), ''),
        n."status"::text, n."attempt", n."outputs", n."error", n."gate_id", n."updated_at" FROM "run_node" n ORDER BY n."run_id", n."node_id"`);
    await q.query(`DROP TABLE "run_node"`);
    await q.query(`DROP TYPE "run_node_status"`);
    await q.query(`ALTER TABLE "run_node_wide" RENAME TO "run_node"`);
    await q.query(`ALTER TABLE "run_node" ADD CONSTRAINT "PK_run_node" PRIMARY KEY ("run_id", "node_id")`);
  }
}
