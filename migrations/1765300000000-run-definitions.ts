import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A run refers to its workflow definition instead of carrying a copy (issue 41: bytes per run). The
 * definitions are stored once per tenant and content in `run_definition`, keyed by (tenant, SHA-256
 * of the definition's jsonb text); a run keeps that hash (`definition_hash`, 33 bytes where the
 * copy was some 400 for a 3-node chain). The key starts with the tenant: a tenant's runs can only
 * name its own definitions, and two tenants running the same chain share nothing.
 *
 * `run_definition_ref(tenant, definition)` stores a definition (`ON CONFLICT DO NOTHING`: the first
 * run of a definition writes it, every later one only probes the key) and answers its hash: every
 * writer of a run calls it inside its own insert, so a run and its definition are written by one
 * statement and no create pays a round trip more.
 *
 * Existing runs are moved in three statements, each one pass over the table: every distinct
 * definition is stored, every run gets its hash (the copy set to null in the same update, so the
 * new row versions are small), then the column is dropped (a catalog change only). On a large table
 * the update rewrites each workflow run once; the space of the old versions is reused by new rows
 * after vacuum (`VACUUM FULL "run"` at a quiet time gives it back to the file system).
 */
export class RunDefinitions1765300000000 implements MigrationInterface {
  name = 'RunDefinitions1765300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE "run_definition" ("tenant" text NOT NULL, "hash" bytea NOT NULL, "definition" jsonb NOT NULL, CONSTRAINT "run_definition_pk" PRIMARY KEY ("tenant", "hash"))`,
    );
    await q.query(`CREATE FUNCTION "run_definition_ref"("p_tenant" text, "p_definition" jsonb) RETURNS bytea LANGUAGE plpgsql AS $$
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
    $$`);
    await q.query(`ALTER TABLE "run" ADD "definition_hash" bytea`);
    await q.query(
      `INSERT INTO "run_definition" ("tenant", "hash", "definition")
       SELECT "tenant", sha256(convert_to("definition"::text, 'UTF8')), "definition" FROM "run" WHERE "definition" IS NOT NULL
       ON CONFLICT ("tenant", "hash") DO NOTHING`,
    );
    await q.query(`UPDATE "run" SET "definition_hash" = sha256(convert_to("definition"::text, 'UTF8')), "definition" = NULL WHERE "definition" IS NOT NULL`);
    await q.query(`ALTER TABLE "run" DROP COLUMN "definition"`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "run" ADD "definition" jsonb`);
    await q.query(
      `UPDATE "run" r SET "definition" = d."definition" FROM "run_definition" d WHERE d."tenant" = r."tenant" AND d."hash" = r."definition_hash"`,
    );
    await q.query(`ALTER TABLE "run" DROP COLUMN "definition_hash"`);
    await q.query(`DROP FUNCTION "run_definition_ref"(text, jsonb)`);
    await q.query(`DROP TABLE "run_definition"`);
  }
}
