import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';

/**
 * A migrated template database for the test run (server mode only). Most test files boot a host on a
 * fresh database; applying every migration there took about two seconds a boot, more than the rest of
 * the boot. The test run migrates one template instead and each fresh database is a copy of it
 * (`CREATE DATABASE … TEMPLATE`, about 0.2 s); the host's own migration step then finds nothing to do.
 *
 * The template is named after a hash of the migration files, so a changed or added migration gets a
 * template of its own and a stale one is never used. It is built under a temporary name and renamed
 * when complete (another run never sees half of one), under an advisory lock (two runs starting at once
 * build it once), and closed to connections (a copy fails while anyone is connected to its source).
 * Templates of other migration sets older than a day are dropped; the current one is kept for the next run.
 */
const PREFIX = 'owt_tpl_';
const LOCK_KEY = 7_406_593_120_077;

export function templateName(): string {
  const dir = path.join(__dirname, '../../migrations');
  const h = createHash('sha256');
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.ts')).sort()) {
    h.update(f);
    h.update(fs.readFileSync(path.join(dir, f)));
  }
  return `${PREFIX}${h.digest('hex').slice(0, 16)}`;
}

function onDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

export async function ensureTemplateDatabase(adminUrl: string): Promise<string> {
  const name = templateName();
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!exists.rowCount) {
      const building = `${name}_${process.pid}`;
      await admin.query(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`);
      await admin.query(`CREATE DATABASE "${building}"`);
      const { MIGRATIONS } = await import('../../migrations');
      const { runMigrations } = await import('../../src/platform/database/migration-runner');
      const ds = new DataSource({ type: 'postgres', url: onDatabase(adminUrl, building), installExtensions: false });
      await ds.initialize();
      try {
        await runMigrations(ds, MIGRATIONS);
      } finally {
        await ds.destroy();
      }
      await admin.query(`ALTER DATABASE "${building}" RENAME TO "${name}"`);
      await admin.query(`ALTER DATABASE "${name}" WITH ALLOW_CONNECTIONS false`);
      await admin.query(`COMMENT ON DATABASE "${name}" IS '${new Date().toISOString()}'`);
    }
    const stale = await admin.query(
      `SELECT d.datname FROM pg_database d WHERE d.datname LIKE '${PREFIX}%' AND d.datname <> $1
         AND coalesce(shobj_description(d.oid, 'pg_database'), '') < $2`,
      [name, new Date(Date.now() - 86_400_000).toISOString()],
    );
    for (const { datname } of stale.rows as Array<{ datname: string }>) {
      await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => undefined);
    }
  } finally {
    await admin.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => undefined);
    await admin.end();
  }
  return name;
}
