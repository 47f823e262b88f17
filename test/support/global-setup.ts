import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** Starts the embedded engine when no PostgreSQL server is available (see jest.config.js). */
export default async function globalSetup(): Promise<void> {
  if (process.env.OPENWOP_TEST_DB_MODE !== 'embedded') return;
  const { startEmbeddedPostgres } = await import('../../src/platform/database/embedded-postgres');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-test-pg-'));
  const pg = await startEmbeddedPostgres(dir, { maxConnections: 64 });
  process.env.DATABASE_URL = `postgres://postgres@localhost/postgres?host=${encodeURIComponent(pg.socketDir)}`;
  (globalThis as { __openwopEmbedded?: { close(): Promise<void>; dir: string } }).__openwopEmbedded = { close: pg.close, dir };
}
