import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A version of each tenant's installed workflow chains, so a replica can keep the chains in memory
 * and still never start a run of a chain that was uninstalled (or miss one just installed) on
 * another replica: `POST /v1/runs` inserts its run only while the tenant's version is the one its
 * cached chains were read at (one statement), else it reads them again.
 *
 * The version is bumped by a trigger on `installed_artifact`, so every path that installs, updates
 * or removes a `workflow-chain-pack` (proposal apply, /v1/installed-packs, bundle imports, a test
 * reset, plain SQL) bumps it without knowing about the cache. Values come from a sequence: a bump
 * rolled back with its transaction is never handed out again, so chains read inside a transaction
 * that rolled back can never look current.
 */
export class ChainCatalogVersion1764950000000 implements MigrationInterface {
  name = 'ChainCatalogVersion1764950000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE SEQUENCE "chain_catalog_version_seq"`);
    await q.query(`CREATE TABLE "chain_catalog_version" ("tenant" text NOT NULL, "version" bigint NOT NULL, CONSTRAINT "chain_catalog_version_pk" PRIMARY KEY ("tenant"))`);
    await q.query(`
      CREATE OR REPLACE FUNCTION "chain_catalog_bump"() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE t text;
      BEGIN
        IF TG_OP = 'TRUNCATE' THEN
          UPDATE "chain_catalog_version" SET "version" = nextval('chain_catalog_version_seq');
          RETURN NULL;
        END IF;
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
          IF OLD."kind" = 'workflow-chain-pack' THEN
            INSERT INTO "chain_catalog_version" ("tenant", "version") VALUES (OLD."tenant", nextval('chain_catalog_version_seq'))
            ON CONFLICT ("tenant") DO UPDATE SET "version" = EXCLUDED."version";
          END IF;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
          IF NEW."kind" = 'workflow-chain-pack' THEN
            INSERT INTO "chain_catalog_version" ("tenant", "version") VALUES (NEW."tenant", nextval('chain_catalog_version_seq'))
            ON CONFLICT ("tenant") DO UPDATE SET "version" = EXCLUDED."version";
          END IF;
        END IF;
        RETURN NULL;
      END $$`);
    // Three triggers, so a row of another kind (a bulk import of tools) costs a WHEN test, not a function call.
    await q.query(`CREATE TRIGGER "installed_artifact_chain_catalog_ins" AFTER INSERT ON "installed_artifact" FOR EACH ROW WHEN (NEW."kind" = 'workflow-chain-pack') EXECUTE FUNCTION "chain_catalog_bump"()`);
    await q.query(`CREATE TRIGGER "installed_artifact_chain_catalog_upd" AFTER UPDATE ON "installed_artifact" FOR EACH ROW WHEN (OLD."kind" = 'workflow-chain-pack' OR NEW."kind" = 'workflow-chain-pack') EXECUTE FUNCTION "chain_catalog_bump"()`);
    await q.query(`CREATE TRIGGER "installed_artifact_chain_catalog_del" AFTER DELETE ON "installed_artifact" FOR EACH ROW WHEN (OLD."kind" = 'workflow-chain-pack') EXECUTE FUNCTION "chain_catalog_bump"()`);
    await q.query(`CREATE TRIGGER "installed_artifact_chain_catalog_truncate" AFTER TRUNCATE ON "installed_artifact" FOR EACH STATEMENT EXECUTE FUNCTION "chain_catalog_bump"()`);
    // Tenants that already have chains: a version of their own (a missing row reads as 0).
    await q.query(
      `INSERT INTO "chain_catalog_version" ("tenant", "version") SELECT DISTINCT "tenant", nextval('chain_catalog_version_seq') FROM "installed_artifact" WHERE "kind" = 'workflow-chain-pack'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER IF EXISTS "installed_artifact_chain_catalog_truncate" ON "installed_artifact"`);
    for (const t of ['ins', 'upd', 'del']) await q.query(`DROP TRIGGER IF EXISTS "installed_artifact_chain_catalog_${t}" ON "installed_artifact"`);
    await q.query(`DROP FUNCTION IF EXISTS "chain_catalog_bump"()`);
    await q.query(`DROP TABLE "chain_catalog_version"`);
    await q.query(`DROP SEQUENCE "chain_catalog_version_seq"`);
  }
}
