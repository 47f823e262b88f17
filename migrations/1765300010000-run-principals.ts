import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Who started a run, stored once per tenant and content instead of in every run row (issue 41: bytes
 * per run): the owner's v2 subject (until now `metadata.subject`, some 150 bytes) and the starter's
 * scopes (the `scopes` array, about 50) go to `run_principal`, keyed by (tenant, SHA-256 of both);
 * a run keeps that hash (`principal_hash`, 33 bytes). The runs one credential starts share one row.
 * `run_principal_ref(tenant, subject, scopes)` stores a pair when it is new and answers its key,
 * inside each writer's run insert (as `run_definition_ref` does for definitions, migration
 * 1765300000000). The subject keeps its jsonb value, so a v2 answer renders it byte for byte as
 * before.
 *
 * Existing runs are moved in three single-pass statements, like their definitions: every distinct
 * pair is stored, every run gets its hash (the subject taken out of its metadata, the scopes set to
 * null in the same update), then the column is dropped.
 */
export class RunPrincipals1765300010000 implements MigrationInterface {
  name = 'RunPrincipals1765300010000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE "run_principal" ("tenant" text NOT NULL, "hash" bytea NOT NULL, "subject" jsonb, "scopes" text array, CONSTRAINT "run_principal_pk" PRIMARY KEY ("tenant", "hash"))`,
    );
    await q.query(`CREATE FUNCTION "run_principal_ref"("p_tenant" text, "p_subject" jsonb, "p_scopes" text[]) RETURNS bytea LANGUAGE plpgsql AS $$
      DECLARE
        "h" bytea;
      BEGIN
        IF "p_subject" IS NULL AND "p_scopes" IS NULL THEN
          RETURN NULL;
        END IF;
        "h" := sha256(convert_to(jsonb_build_array("p_subject", to_jsonb("p_scopes"))::text, 'UTF8'));
        INSERT INTO "run_principal" ("tenant", "hash", "subject", "scopes") VALUES ("p_tenant", "h", "p_subject", "p_scopes") ON CONFLICT ("tenant", "hash") DO NOTHING;
        RETURN "h";
      END
    $$`);
    await q.query(`ALTER TABLE "run" ADD "principal_hash" bytea`);
    const hash = `sha256(convert_to(jsonb_build_array("metadata"->'subject', to_jsonb("scopes"))::text, 'UTF8'))`;
    const moved = `("metadata" ? 'subject' OR "scopes" IS NOT NULL)`;
    await q.query(
      `INSERT INTO "run_principal" ("tenant", "hash", "subject", "scopes") SELECT "tenant", ${hash}, "metadata"->'subject', "scopes" FROM "run" WHERE ${moved}
       ON CONFLICT ("tenant", "hash") DO NOTHING`,
    );
    await q.query(`UPDATE "run" SET "principal_hash" = ${hash}, "metadata" = "metadata" - 'subject', "scopes" = NULL WHERE ${moved}`);
    await q.query(`ALTER TABLE "run" DROP COLUMN "scopes"`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" ADD "scopes" text array`);
    await q.query(
      `UPDATE "run" r SET "scopes" = p."scopes", "metadata" = CASE WHEN p."subject" IS NULL THEN r."metadata" ELSE r."metadata" || jsonb_build_object('subject', p."subject") END
       FROM "run_principal" p WHERE p."tenant" = r."tenant" AND p."hash" = r."principal_hash"`,
    );
    await q.query(`ALTER TABLE "run" DROP COLUMN "principal_hash"`);
    await q.query(`DROP FUNCTION "run_principal_ref"(text, jsonb, text[])`);
    await q.query(`DROP TABLE "run_principal"`);
  }
}
