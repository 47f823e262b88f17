import type { DataSource, MigrationInterface } from 'typeorm';

export type MigrationClass = new () => MigrationInterface;

/** Any 64-bit constant; it names "the host's migrations" in pg_advisory_xact_lock. */
const MIGRATION_LOCK_KEY = 7_406_593_120_011;
const TABLE = 'openwop_migrations';

export interface MigrationStatus {
  name: string;
  applied: boolean;
  appliedAt?: string;
}

function migrationName(m: MigrationClass): string {
  const instance = new m();
  return instance.name ?? m.name;
}

async function ensureTable(run: (sql: string, params?: unknown[]) => Promise<unknown>): Promise<void> {
  await run(
    `CREATE TABLE IF NOT EXISTS "${TABLE}" ("id" SERIAL PRIMARY KEY, "name" text NOT NULL UNIQUE, "applied_at" timestamptz NOT NULL DEFAULT now())`,
  );
}

/**
 * The names the migrations table records, read without a transaction, a lock or DDL (undefined when
 * the table does not exist yet): one statement that tells a start on a current schema it has
 * nothing to do.
 */
async function recordedNames(ds: DataSource): Promise<Set<string> | undefined> {
  try {
    return new Set(((await ds.query(`SELECT "name" FROM "${TABLE}"`)) as Array<{ name: string }>).map((r) => r.name));
  } catch (e) {
    if ((e as { code?: string }).code === '42P01') return undefined; // undefined_table: a new database
    throw e;
  }
}

/**
 * Applies the explicit, ordered migration list in ONE transaction holding a transaction-scoped
 * advisory lock, so replicas starting together cannot race (the lock is released by commit or
 * rollback and can never be orphaned). Returns the names it applied.
 *
 * A schema that already records every migration of the list (every start but the first after an
 * upgrade) is seen in one plain read and left alone: no transaction, lock or DDL. A migration recorded
 * is never undone, so the read cannot be stale in the direction that matters; a missing one takes
 * the locked path, which reads the table again under the lock.
 */
export async function runMigrations(ds: DataSource, migrations: readonly MigrationClass[]): Promise<string[]> {
  const recorded = await recordedNames(ds);
  if (recorded && migrations.every((m) => recorded.has(migrationName(m)))) return [];
  const qr = ds.createQueryRunner();
  await qr.connect();
  const applied: string[] = [];
  let restoreDeadline = () => undefined as void;
  try {
    await qr.startTransaction();
    // A migration may take long (an index on a big table) and waits for another replica's: no
    // statement or lock timeout applies to it, on the server or on the client.
    const client = (qr as unknown as { databaseConnection?: { queryDeadlineMs?: number } }).databaseConnection;
    const deadline = client?.queryDeadlineMs;
    if (client) client.queryDeadlineMs = 0;
    restoreDeadline = () => {
      if (client) client.queryDeadlineMs = deadline;
    };
    await qr.query(`SET LOCAL statement_timeout = 0`);
    await qr.query(`SET LOCAL lock_timeout = 0`);
    await qr.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await ensureTable((sql, p) => qr.query(sql, p));
    const done = new Set<string>(((await qr.query(`SELECT "name" FROM "${TABLE}"`)) as Array<{ name: string }>).map((r) => r.name));
    for (const m of migrations) {
      const name = migrationName(m);
      if (done.has(name)) continue;
      await new m().up(qr);
      await qr.query(`INSERT INTO "${TABLE}" ("name") VALUES ($1)`, [name]);
      applied.push(name);
    }
    await qr.commitTransaction();
    return applied;
  } catch (e) {
    if (qr.isTransactionActive) await qr.rollbackTransaction();
    throw e;
  } finally {
    restoreDeadline();
    await qr.release();
  }
}

export async function migrationStatus(ds: DataSource, migrations: readonly MigrationClass[]): Promise<MigrationStatus[]> {
  await ensureTable((sql, p) => ds.query(sql, p));
  const rows = (await ds.query(`SELECT "name", "applied_at" FROM "${TABLE}"`)) as Array<{ name: string; applied_at: Date }>;
  const byName = new Map(rows.map((r) => [r.name, r.applied_at]));
  return migrations.map((m) => {
    const name = migrationName(m);
    const at = byName.get(name);
    return { name, applied: !!at, appliedAt: at ? new Date(at).toISOString() : undefined };
  });
}

/** The migrations of the list the database has not recorded: one read (readiness probes ask often), no DDL. */
export async function pendingMigrations(ds: DataSource, migrations: readonly MigrationClass[]): Promise<string[]> {
  const recorded = (await recordedNames(ds)) ?? new Set<string>();
  return migrations.map(migrationName).filter((name) => !recorded.has(name));
}
