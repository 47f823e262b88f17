import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The run table's pages are filled (issue 41: bytes per run). Migration 1764970000000 left a fifth of
 * each page free (fillfactor 80) so that a claim would be a heap-only update, but no update of a run
 * by the run engine is one: a claim changes `lease_owner` (in `run_leased_idx`'s predicate) and
 * `status`, an end changes `status` (in `run_tenant_status_created_idx` and every partial index's
 * predicate), and an update that changes an indexed column writes new index entries wherever its
 * new version lands. A run created in one go is never updated at all. The free fifth held nothing.
 *
 * Only the catalog changes (no rewrite): pages written from now on are filled, and inserts fill the
 * free space of the pages there are.
 */
export class RunFillfactor1765430000000 implements MigrationInterface {
  name = 'RunFillfactor1765430000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" RESET (fillfactor)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" SET (fillfactor = 80)`);
  }
}
