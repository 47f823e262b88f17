/**
 * A start on a schema that records every migration does no migration work: one read of the
 * migrations table, no transaction, advisory lock or DDL (every boot of a host, and every readiness
 * probe, used to run the locked transaction and a CREATE TABLE IF NOT EXISTS). A migration the
 * table does not record still takes the locked path and is applied.
 */
import { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { ENTITIES } from '../../src/entities';
import { MigrationClass, pendingMigrations, runMigrations } from '../../src/platform/database/migration-runner';
import { createScratchDatabase } from '../support/scratch-db';

/** Every statement the data source sends, through its query runners and its own query(). */
function recordStatements(ds: DataSource): string[] {
  const seen: string[] = [];
  const driver = ds.driver as unknown as { createQueryRunner(mode: string): QueryRunner };
  const create = driver.createQueryRunner.bind(driver);
  driver.createQueryRunner = (mode: string) => {
    const qr = create(mode);
    const query = qr.query.bind(qr);
    qr.query = ((sql: string, params?: unknown[], structured?: boolean) => {
      seen.push(sql.replace(/\s+/g, ' ').trim());
      return query(sql, params, structured as never);
    }) as typeof qr.query;
    for (const m of ['startTransaction', 'commitTransaction', 'rollbackTransaction'] as const) {
      const original = qr[m].bind(qr);
      qr[m] = (async (...a: unknown[]) => {
        seen.push(m);
        return (original as (...x: unknown[]) => Promise<void>)(...a);
      }) as never;
    }
    return qr;
  };
  return seen;
}

class LateMigration1765200600001 implements MigrationInterface {
  name = 'LateMigration1765200600001';
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`CREATE TABLE "late_migration_probe" ("id" int PRIMARY KEY)`);
  }
  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`DROP TABLE "late_migration_probe"`);
  }
}

describe('migrations on a current schema', () => {
  let db: Awaited<ReturnType<typeof createScratchDatabase>>;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createScratchDatabase();
    ds = new DataSource({ type: 'postgres', url: db.url, entities: ENTITIES, installExtensions: false, uuidExtension: 'pgcrypto' });
    await ds.initialize();
  });
  afterAll(async () => {
    await ds.destroy();
    await db.drop();
  });

  it('a new database has every migration pending (no table yet), and the first run applies them all', async () => {
    expect(await pendingMigrations(ds, MIGRATIONS)).toHaveLength(MIGRATIONS.length);
    expect(await runMigrations(ds, MIGRATIONS)).toHaveLength(MIGRATIONS.length);
  });

  it('a run on a current schema sends one read and nothing else: no transaction, lock or DDL', async () => {
    const seen = recordStatements(ds);
    expect(await runMigrations(ds, MIGRATIONS)).toEqual([]);
    expect(await pendingMigrations(ds, MIGRATIONS)).toEqual([]);
    expect(seen).toEqual(['SELECT "name" FROM "openwop_migrations"', 'SELECT "name" FROM "openwop_migrations"']);
  });

  it('a migration the table does not record takes the locked transaction and is applied once', async () => {
    const list: MigrationClass[] = [...MIGRATIONS, LateMigration1765200600001];
    expect(await pendingMigrations(ds, list)).toEqual(['LateMigration1765200600001']);
    const seen = recordStatements(ds);
    const applied = await Promise.all([runMigrations(ds, list), runMigrations(ds, list)]);
    expect(applied.flat()).toEqual(['LateMigration1765200600001']);
    expect(seen).toContain('startTransaction');
    expect(seen.some((q) => q.startsWith('SELECT pg_advisory_xact_lock'))).toBe(true);
    expect(await ds.query(`SELECT count(*)::int AS n FROM "late_migration_probe"`)).toEqual([{ n: 0 }]);
    expect(await pendingMigrations(ds, list)).toEqual([]);
  });
});
