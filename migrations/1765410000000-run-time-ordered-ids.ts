import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Run ids in creation order (issue 41: claims on a grown database): a new run's id is a UUID version 7
 * (RFC 9562: the first 48 bits the creation time in milliseconds, the rest random), made by the host
 * (src/capabilities/runs/engine/run-id.ts) or, for a row inserted without one, by the column's default
 * `run_new_id()` defined here. With random (version 4) ids every run's first insert and each later
 * version of its row (a status change updates indexed columns, so every index gets an entry) landed
 * on a random page of the `run` primary key, and its nodes and event stream on random pages of
 * `run_node`'s and `event_stream`'s keys: on a database of 200,000 runs, 2,000 runs worked off wrote
 * to 939 pages of the run key and 1,653 of the node key, every one a full page image in the WAL after
 * a checkpoint and a buffer the cache must hold; with time-ordered ids 17 and 55. Existing ids stay as
 * they are (a run id is never reused or rewritten); new ones sort after them within their range.
 */
export class RunTimeOrderedIds1765410000000 implements MigrationInterface {
  name = 'RunTimeOrderedIds1765410000000';

  async up(q: QueryRunner): Promise<void> {
    // Bytes 0-5: Unix time in ms (clock_timestamp: each row its own); version nibble 7 (bits 52, 53 added to
    // gen_random_uuid's 4); variant and the other 74 bits as gen_random_uuid drew them.
    await q.query(`CREATE FUNCTION "run_new_id"() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
      SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
    $$`);
    await q.query(`ALTER TABLE "run" ALTER COLUMN "id" SET DEFAULT "run_new_id"()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" ALTER COLUMN "id" SET DEFAULT gen_random_uuid()`);
    await q.query(`DROP FUNCTION "run_new_id"()`);
  }
}
