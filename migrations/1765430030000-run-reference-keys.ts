import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The two functions as migrations 1765300000000 and 1765300010000 made them (answering the hash), for `down`. */
const HASH_FUNCTIONS = [
  `CREATE FUNCTION "run_definition_ref"("p_tenant" text, "p_definition" jsonb) RETURNS bytea LANGUAGE plpgsql AS $$
      DECLARE
        "h" bytea;
      BEGIN
        IF "p_definition" IS NULL THEN
          RETURN NULL;
        END IF;
        "h" := sha256(convert_to("p_definition"::text, 'UTF8'));
        INSERT INTO "run_definition" ("tenant", "hash", "definition") VALUES ("p_tenant", "h", "p_definition") ON CONFLICT ("tenant", "hash") DO NOTHING;
        RETURN "h";
      END
    $$`,
  `CREATE FUNCTION "run_principal_ref"("p_tenant" text, "p_subject" jsonb, "p_scopes" text[]) RETURNS bytea LANGUAGE plpgsql AS $$
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
    $$`,
];

/**
 * A run refers to its stored definition and principal by a number (issue 41: bytes per run): each
 * `run_definition` and `run_principal` row gets a bigint `key` drawn from a sequence when it is first
 * stored, and a run keeps the two keys (`definition_key`, `principal_key`: 8 bytes each) where it kept
 * the two SHA-256 hashes (33 bytes each). The hash stays the row's identity within its tenant (the
 * primary key (tenant, hash) finds a definition or principal already stored); the key only names it.
 * A reader still checks the row's tenant against the run's, as with the hash.
 *
 * `run_definition_ref` and `run_principal_ref` now answer the key: they look the content's hash up
 * first (every run after a definition's first only reads), else store it (`ON CONFLICT DO NOTHING`:
 * a concurrent first store of the same content wins, and its key is read back).
 *
 * Existing runs get their keys in one update of every run that has a reference (the old columns are
 * then dropped, a catalog change); see docs/operations.md (upgrades) for its time.
 */
export class RunReferenceKeys1765430030000 implements MigrationInterface {
  name = 'RunReferenceKeys1765430030000';

  async up(q: QueryRunner): Promise<void> {
    for (const table of ['run_definition', 'run_principal']) {
      await q.query(`CREATE SEQUENCE "${table}_key_seq" AS bigint OWNED BY NONE`);
      await q.query(`ALTER TABLE "${table}" ADD COLUMN "key" bigint`);
      await q.query(`UPDATE "${table}" SET "key" = nextval('"${table}_key_seq"')`);
      await q.query(`ALTER TABLE "${table}" ALTER COLUMN "key" SET DEFAULT nextval('"${table}_key_seq"'), ALTER COLUMN "key" SET NOT NULL`);
      await q.query(`ALTER SEQUENCE "${table}_key_seq" OWNED BY "${table}"."key"`);
      await q.query(`CREATE UNIQUE INDEX "${table}_key_uq" ON "${table}" ("key")`);
    }
    await q.query(`DROP FUNCTION "run_definition_ref"(text, jsonb)`);
    await q.query(`DROP FUNCTION "run_principal_ref"(text, jsonb, text[])`);
    await q.query(`CREATE FUNCTION "run_definition_ref"("p_tenant" text, "p_definition" jsonb) RETURNS bigint LANGUAGE plpgsql AS $$
      DECLARE
        "h" bytea;
        "k" bigint;
      BEGIN
        IF "p_definition" IS NULL THEN
          RETURN NULL;
        END IF;
        "h" := sha256(convert_to("p_definition"::text, 'UTF8'));
        SELECT d."key" INTO "k" FROM "run_definition" d WHERE d."tenant" = "p_tenant" AND d."hash" = "h";
        IF "k" IS NULL THEN
          INSERT INTO "run_definition" ("tenant", "hash", "definition") VALUES ("p_tenant", "h", "p_definition") ON CONFLICT ("tenant", "hash") DO NOTHING RETURNING "key" INTO "k";
          IF "k" IS NULL THEN
            SELECT d."key" INTO "k" FROM "run_definition" d WHERE d."tenant" = "p_tenant" AND d."hash" = "h";
          END IF;
        END IF;
        RETURN "k";
      END
    $$`);
    await q.query(`CREATE FUNCTION "run_principal_ref"("p_tenant" text, "p_subject" jsonb, "p_scopes" text[]) RETURNS bigint LANGUAGE plpgsql AS $$
      DECLARE
        "h" bytea;
        "k" bigint;
      BEGIN
        IF "p_subject" IS NULL AND "p_scopes" IS NULL THEN
          RETURN NULL;
        END IF;
        "h" := sha256(convert_to(jsonb_build_array("p_subject", to_jsonb("p_scopes"))::text, 'UTF8'));
        SELECT p."key" INTO "k" FROM "run_principal" p WHERE p."tenant" = "p_tenant" AND p."hash" = "h";
        IF "k" IS NULL THEN
          INSERT INTO "run_principal" ("tenant", "hash", "subject", "scopes") VALUES ("p_tenant", "h", "p_subject", "p_scopes") ON CONFLICT ("tenant", "hash") DO NOTHING RETURNING "key" INTO "k";
          IF "k" IS NULL THEN
            SELECT p."key" INTO "k" FROM "run_principal" p WHERE p."tenant" = "p_tenant" AND p."hash" = "h";
          END IF;
        END IF;
        RETURN "k";
      END
    $$`);
    await q.query(`ALTER TABLE "run" ADD "definition_key" bigint, ADD "principal_key" bigint`);
    await q.query(
      `UPDATE "run" r SET
         "definition_key" = (SELECT d."key" FROM "run_definition" d WHERE d."tenant" = r."tenant" AND d."hash" = r."definition_hash"),
         "principal_key" = (SELECT p."key" FROM "run_principal" p WHERE p."tenant" = r."tenant" AND p."hash" = r."principal_hash")
       WHERE r."definition_hash" IS NOT NULL OR r."principal_hash" IS NOT NULL`,
    );
    await q.query(`ALTER TABLE "run" DROP COLUMN "definition_hash", DROP COLUMN "principal_hash"`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" ADD "definition_hash" bytea, ADD "principal_hash" bytea`);
    await q.query(
      `UPDATE "run" r SET
         "definition_hash" = (SELECT d."hash" FROM "run_definition" d WHERE d."key" = r."definition_key"),
         "principal_hash" = (SELECT p."hash" FROM "run_principal" p WHERE p."key" = r."principal_key")
       WHERE r."definition_key" IS NOT NULL OR r."principal_key" IS NOT NULL`,
    );
    await q.query(`ALTER TABLE "run" DROP COLUMN "definition_key", DROP COLUMN "principal_key"`);
    await q.query(`DROP FUNCTION "run_definition_ref"(text, jsonb)`);
    await q.query(`DROP FUNCTION "run_principal_ref"(text, jsonb, text[])`);
    for (const f of HASH_FUNCTIONS) await q.query(f);
    for (const table of ['run_definition', 'run_principal']) {
      await q.query(`DROP INDEX "${table}_key_uq"`);
      await q.query(`ALTER TABLE "${table}" DROP COLUMN "key"`);
    }
  }
}
