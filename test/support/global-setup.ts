import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * Starts the embedded engine when no PostgreSQL server is available (see jest.config.js). Its
 * warnings and errors (a connection waiting long for the backend, a transaction rolled back for a
 * closed connection) go to stderr and to test/.tmp/embedded-engine.log, so a test that holds a
 * transaction while it waits for another connection is seen for what it is.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.OPENWOP_TEST_DB_MODE !== 'embedded') {
    // Server mode: fresh test databases are copies of one migrated template (test/support/template-db.ts).
    if (process.env.DATABASE_URL && !process.env.OPENWOP_TEST_TEMPLATE_DB) {
      const { ensureTemplateDatabase } = await import('./template-db');
      process.env.OPENWOP_TEST_TEMPLATE_DB = await ensureTemplateDatabase(process.env.DATABASE_URL);
    }
    // A whole run's test databases are made and dropped off the tests' path (database-pool.ts).
    if (process.env.DATABASE_URL && process.env.OPENWOP_TEST_TEMPLATE_DB && process.env.OPENWOP_TEST_GROUPS === '1' && !process.env.OPENWOP_TEST_DB_DROP_QUEUE) {
      const { startDatabasePool } = await import('./database-pool');
      const queue = path.join(__dirname, `../.tmp/databases-to-drop-${process.pid}.txt`);
      fs.mkdirSync(path.dirname(queue), { recursive: true });
      const pool = await startDatabasePool(process.env.DATABASE_URL, process.env.OPENWOP_TEST_TEMPLATE_DB, queue);
      process.env.OPENWOP_TEST_DB_DROP_QUEUE = queue;
      (globalThis as { __openwopDatabasePool?: { stop(): Promise<void>; queue: string } }).__openwopDatabasePool = { stop: pool.stop, queue };
    }
    return;
  }
  const { startEmbeddedPostgres } = await import('../../src/platform/database/embedded-postgres');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-test-pg-'));
  const logFile = path.join(__dirname, '../.tmp/embedded-engine.log');
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const line = (level: string) => ({ msg, ...data }: { msg: string } & Record<string, unknown>) => {
    const text = `${new Date().toISOString()} ${level} ${msg} ${JSON.stringify(data)}\n`;
    fs.appendFileSync(logFile, text);
    if (level !== 'info') process.stderr.write(`embedded engine: ${text}`);
  };
  const pg = await startEmbeddedPostgres(dir, { maxConnections: 64, log: { info: line('info'), warn: line('warn'), error: line('error') } });
  process.env.DATABASE_URL = `postgres://postgres@localhost/postgres?host=${encodeURIComponent(pg.socketDir)}`;
  (globalThis as { __openwopEmbedded?: { close(): Promise<void>; dir: string } }).__openwopEmbedded = { close: pg.close, dir };
}
