import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource, MigrationInterface } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { runMigrations } from '../../src/platform/database/migration-runner';

/** A fresh, empty database on the test server (for migration and drift tests). */
export async function createScratchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = process.env.DATABASE_URL!;
  if (process.env.OPENWOP_TEST_DB_MODE === 'embedded') {
    const c = new Client({ connectionString: adminUrl });
    await c.connect();
    await c.query('DROP SCHEMA IF EXISTS public CASCADE');
    await c.query('CREATE SCHEMA public');
    await c.end();
    return { url: adminUrl, drop: async () => undefined };
  }
  const name = `ows_${randomBytes(6).toString('hex')}`;
  const c = new Client({ connectionString: adminUrl });
  await c.connect();
  await c.query(`CREATE DATABASE "${name}"`);
  await c.end();
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      const d = new Client({ connectionString: adminUrl });
      await d.connect();
      await d.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await d.end();
    },
  };
}

/**
 * A scratch data source for the enclosing `describe`: opened before its tests, closed and dropped after
 * them; `ds` is the data source (read it inside a hook or a test).
 */
export function useScratchDataSource(): { readonly ds: DataSource } {
  let scratch: Awaited<ReturnType<typeof scratchDataSource>> | undefined;
  beforeAll(async () => {
    scratch = await scratchDataSource();
  });
  afterAll(async () => {
    await scratch?.close();
  });
  return {
    get ds(): DataSource {
      if (!scratch) throw new Error('the scratch data source opens in beforeAll: read it inside a hook or a test');
      return scratch.ds;
    },
  };
}

/** A fresh database with a data source opened on it (no entities: the migrations make the schema); `close` drops both. */
export async function scratchDataSource(): Promise<{ ds: DataSource; close(): Promise<void> }> {
  const db = await createScratchDatabase();
  const ds = new DataSource({ type: 'postgres', url: db.url, installExtensions: false });
  await ds.initialize();
  return {
    ds,
    async close() {
      await ds.destroy();
      await db.drop();
    },
  };
}

/** Runs one migration's `up` or `down` on `ds` in a transaction, as the migration runner runs it. */
export async function runOneMigration(ds: DataSource, migration: MigrationInterface, how: 'up' | 'down'): Promise<void> {
  const runner = ds.createQueryRunner();
  try {
    await runner.startTransaction();
    await migration[how](runner);
    await runner.commitTransaction();
  } finally {
    await runner.release();
  }
}

/**
 * Brings `ds` to the schema just before the migration named `name` (every migration listed before it,
 * run as the host runs them); answers its place in MIGRATIONS, for running it (and the ones after) next.
 */
export async function migrateUpTo(ds: DataSource, name: string): Promise<number> {
  const i = MIGRATIONS.findIndex((m) => (new m().name ?? m.name) === name);
  expect(i).toBeGreaterThan(0);
  await runMigrations(ds, MIGRATIONS.slice(0, i));
  return i;
}
