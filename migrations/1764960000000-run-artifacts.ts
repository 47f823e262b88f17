import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `run_artifact`: the files nodes produce (`ctx.artifacts.put`), tenant- and workspace-scoped,
 * listed on the run snapshot and served by `GET /v1/runs/{runId}/artifacts/{artifactId}`. The
 * bytes live in `content` with the database store, or behind `store_ref` in a plugin store.
 */
export class RunArtifacts1764960000000 implements MigrationInterface {
  name = 'RunArtifacts1764960000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "run_artifact" (
      "id" uuid NOT NULL,
      "tenant" text NOT NULL,
      "workspace" text,
      "run_id" uuid NOT NULL,
      "node_id" text NOT NULL,
      "name" text NOT NULL,
      "content_type" text NOT NULL,
      "size_bytes" bigint NOT NULL,
      "store" text NOT NULL,
      "store_ref" text,
      "content" bytea,
      "metadata" jsonb,
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      CONSTRAINT "PK_run_artifact" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX "IDX_run_artifact_run" ON "run_artifact" ("tenant", "run_id", "created_at")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "run_artifact"`);
  }
}
