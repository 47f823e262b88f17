import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A leaner event store (issue 41): fewer bytes per event, the same read paths.
 * - The stream's unique index (tenant, stream_id, sequence) becomes the table's primary key, and the
 *   primary key on `id` goes: every read finds events by their stream (follow, poll, list, replay,
 *   retention), and the two lookups by id (a run engine write whose answer was lost; a webhook
 *   delivery) know the stream too. The id index was a third of the table's index bytes. Event ids stay
 *   random UUIDs the host mints (or copies with new ids, for a fork).
 * - `payload` is stored as `json` (the text as written) instead of `jsonb`: the binary form holds an
 *   offset per key and per value and a numeric per number, so a run event's small payload took about
 *   half again its text's bytes. Nothing queries inside a payload but by `->>` (the tool-call log),
 *   which `json` has too; a payload comes back with the keys in the order the host wrote them.
 * Both are rewrites of the table under its lock (the type change rewrites every row; the key
 * reuses the unique index as it is).
 */
export class LeanEventStore1765100070000 implements MigrationInterface {
  name = 'LeanEventStore1765100070000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "event" DROP CONSTRAINT "PK_30c2f3bbaf6d34a55f8ae6e4614"`);
    await q.query(`ALTER TABLE "event" ADD CONSTRAINT "event_stream_seq_uq" PRIMARY KEY USING INDEX "event_stream_seq_uq"`);
    await q.query(`ALTER TABLE "event" ALTER COLUMN "payload" TYPE json USING "payload"::json`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "event" ALTER COLUMN "payload" TYPE jsonb USING "payload"::jsonb`);
    await q.query(`ALTER TABLE "event" DROP CONSTRAINT "event_stream_seq_uq"`);
    await q.query(`CREATE UNIQUE INDEX "event_stream_seq_uq" ON "event" ("tenant", "stream_id", "sequence")`);
    await q.query(`ALTER TABLE "event" ADD CONSTRAINT "PK_30c2f3bbaf6d34a55f8ae6e4614" PRIMARY KEY ("id")`);
  }
}
