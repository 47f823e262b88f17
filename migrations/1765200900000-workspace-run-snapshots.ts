import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A run's workspace snapshot (RFC 0059 §D): each store counts its writes (`revision`), each version
 * records the revision that wrote it, and a run records the revision of its store when it started
 * (`workspace_run_snapshot`), so its reads answer the files as of that point on any replica. Versions
 * written before this migration carry revision 0: they precede every snapshot.
 */
export class WorkspaceRunSnapshots1765200900000 implements MigrationInterface {
  name = 'WorkspaceRunSnapshots1765200900000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "workspace_store" ADD "revision" bigint NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE "workspace_file_version" ADD "revision" bigint NOT NULL DEFAULT 0`);
    await q.query(
      `CREATE TABLE "workspace_run_snapshot" ("tenant" text NOT NULL, "run_id" text NOT NULL, "workspace_key" text NOT NULL, "revision" bigint NOT NULL, CONSTRAINT "workspace_run_snapshot_pk" PRIMARY KEY ("tenant", "run_id"))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "workspace_run_snapshot"`);
    await q.query(`ALTER TABLE "workspace_file_version" DROP COLUMN "revision"`);
    await q.query(`ALTER TABLE "workspace_store" DROP COLUMN "revision"`);
  }
}
