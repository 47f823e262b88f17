import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The agent workspace (RFC 0059, src/capabilities/workspace): one row per tenant·workspace store
 * (the lock its writes take, and its live file count), a head row per file (its current or tombstone
 * version), and the retained versions with their content. Every key leads with the tenant.
 */
export class WorkspaceFiles1765200000000 implements MigrationInterface {
  name = 'WorkspaceFiles1765200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE "workspace_store" ("tenant" text NOT NULL, "workspace_key" text NOT NULL, "file_count" integer NOT NULL DEFAULT 0, CONSTRAINT "workspace_store_pk" PRIMARY KEY ("tenant", "workspace_key"))`,
    );
    await q.query(
      `CREATE TABLE "workspace_file" ("tenant" text NOT NULL, "workspace_key" text NOT NULL, "path" text NOT NULL, "version" integer NOT NULL, "deleted" boolean NOT NULL DEFAULT false, "content_type" text NOT NULL, "size_bytes" integer NOT NULL, "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "workspace_file_pk" PRIMARY KEY ("tenant", "workspace_key", "path"))`,
    );
    await q.query(
      `CREATE TABLE "workspace_file_version" ("tenant" text NOT NULL, "workspace_key" text NOT NULL, "path" text NOT NULL, "version" integer NOT NULL, "content" text, "content_type" text NOT NULL, "size_bytes" integer NOT NULL, "written_by" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "workspace_file_version_pk" PRIMARY KEY ("tenant", "workspace_key", "path", "version"))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "workspace_file_version"`);
    await q.query(`DROP TABLE "workspace_file"`);
    await q.query(`DROP TABLE "workspace_store"`);
  }
}
