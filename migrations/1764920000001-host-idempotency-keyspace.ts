import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * idempotency.md §"Keyspace separation": keys the host mints for its own launches (goal iterations
 * `goal-iteration:...`, automation slots `automation:...`) must not share a keyspace with callers'
 * `Idempotency-Key`s, or a caller sending `Idempotency-Key: automation:<id>:<slot>` takes the slot's
 * run. From now on host keys are stored as `host <key>`: a caller's key is visible ASCII without
 * spaces, so it can never collide with one. This moves the host keys written before into it, so an
 * iteration or slot in flight across the upgrade still finds its run.
 */
export class HostIdempotencyKeyspace1764920000001 implements MigrationInterface {
  name = 'HostIdempotencyKeyspace1764920000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `UPDATE "run" SET "idempotency_key" = 'host ' || "idempotency_key"
       WHERE "idempotency_key" LIKE 'goal-iteration:%' OR ("idempotency_key" LIKE 'automation:%' AND "kind" = 'workflow')`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`UPDATE "run" SET "idempotency_key" = substr("idempotency_key", 6) WHERE "idempotency_key" LIKE 'host %'`);
  }
}
