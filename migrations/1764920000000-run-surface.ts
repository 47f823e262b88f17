import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Run-creation fidelity (idempotency.md Layer 1 and 2, rest-endpoints.md POST /v1/runs):
 *
 * - `run.create_response`: the answer the first `POST /v1/runs` of an Idempotency-Key gave, so a
 *   replay answers that same body (not the run as it is now);
 * - `run.scope_id` (the body's opaque correlation id) and `run.dedup_scope` (set only when the
 *   request asked `X-Dedup: enforce`), with a partial unique index holding at most one active
 *   enforced run per tenant, workspace and scope: the atomic claim behind `409 run_already_active`;
 * - `idempotency_record`: the Layer-1 store of the other mutating routes (cancel), keyed by tenant,
 *   workspace, routed operation and caller key, with the request digest, a state, a lease and the
 *   final answer;
 * - `activity_invocation`: the Layer-2 invocation log, one row per logical effect identity, claimed
 *   with an insert-if-absent so at most one executor performs the effect.
 */
export class RunSurface1764920000000 implements MigrationInterface {
  name = 'RunSurface1764920000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" ADD COLUMN IF NOT EXISTS "create_response" jsonb`);
    await q.query(`ALTER TABLE "run" ADD COLUMN IF NOT EXISTS "scope_id" text`);
    await q.query(`ALTER TABLE "run" ADD COLUMN IF NOT EXISTS "dedup_scope" text`);
    await q.query(
      `CREATE UNIQUE INDEX IF NOT EXISTS "run_dedup_active_uq" ON "run" ("tenant", "workspace_key", "dedup_scope") WHERE "dedup_scope" IS NOT NULL AND "status" IN ('pending', 'running', 'paused', 'waiting-approval', 'waiting-input', 'waiting-external', 'cancelling')`,
    );
    await q.query(`CREATE INDEX IF NOT EXISTS "run_scope_idx" ON "run" ("tenant", "workspace_key", "scope_id")`);
    await q.query(`CREATE TABLE IF NOT EXISTS "idempotency_record" (
      "tenant" text NOT NULL,
      "workspace_key" text NOT NULL DEFAULT '',
      "endpoint" text NOT NULL,
      "idempotency_key" text NOT NULL,
      "request_digest" text NOT NULL,
      "state" text NOT NULL,
      "lease_owner" text,
      "lease_expires_at" timestamptz,
      "response_status" integer,
      "response_body" jsonb,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      "expires_at" timestamptz NOT NULL,
      CONSTRAINT "idempotency_record_pk" PRIMARY KEY ("tenant", "workspace_key", "endpoint", "idempotency_key")
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS "idempotency_record_expiry_idx" ON "idempotency_record" ("expires_at")`);
    await q.query(`CREATE TABLE IF NOT EXISTS "activity_invocation" (
      "logical_invocation_id" text NOT NULL,
      "tenant" text NOT NULL,
      "run_id" text NOT NULL,
      "node_id" text NOT NULL,
      "ordinal" integer NOT NULL,
      "provider_key" text NOT NULL,
      "state" text NOT NULL,
      "owner" text NOT NULL,
      "result" jsonb,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      "expires_at" timestamptz NOT NULL,
      CONSTRAINT "activity_invocation_pk" PRIMARY KEY ("logical_invocation_id")
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS "activity_invocation_run_idx" ON "activity_invocation" ("tenant", "run_id")`);
    await q.query(`CREATE INDEX IF NOT EXISTS "activity_invocation_expiry_idx" ON "activity_invocation" ("expires_at")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "activity_invocation"`);
    await q.query(`DROP TABLE IF EXISTS "idempotency_record"`);
    await q.query(`DROP INDEX IF EXISTS "run_scope_idx"`);
    await q.query(`DROP INDEX IF EXISTS "run_dedup_active_uq"`);
    await q.query(`ALTER TABLE "run" DROP COLUMN IF EXISTS "dedup_scope"`);
    await q.query(`ALTER TABLE "run" DROP COLUMN IF EXISTS "scope_id"`);
    await q.query(`ALTER TABLE "run" DROP COLUMN IF EXISTS "create_response"`);
  }
}
