/**
 * The embedded engine on a worker thread (the default) and on the host's own thread
 * (OPENWOP_EMBEDDED_THREAD=main) answer alike: statements and their errors, an answer longer than
 * one part of the worker's stream (256 KB), a transaction left open by a connection that went away
 * (rolled back, which reads the backend's transaction state), and data kept across a restart. The
 * engine runs in a child process (it cannot start inside a Jest worker), through startEmbeddedPostgres
 * and pg connections on its socket.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '../..');

function onEngine(dir: string, thread: 'worker' | 'main'): Promise<Record<string, unknown>> {
  const script = `
    const { startEmbeddedPostgres } = require(${JSON.stringify(path.join(ROOT, 'src/platform/database/embedded-postgres.ts'))});
    const { Client } = require('pg');
    (async () => {
      const e = await startEmbeddedPostgres(${JSON.stringify(dir)}, { thread: ${JSON.stringify(thread)} });
      const connect = async () => { const c = new Client({ host: e.socketDir, port: e.port, user: 'postgres', database: 'postgres' }); await c.connect(); return c; };
      const a = await connect();
      const out = {};
      out.answer = (await a.query('SELECT 1 AS one')).rows[0].one;
      await a.query('CREATE TABLE IF NOT EXISTS "kept" ("v" text)');
      out.before = (await a.query('SELECT count(*)::int AS n FROM "kept"')).rows[0].n;
      await a.query("INSERT INTO \\"kept\\" VALUES ('x')");
      out.error = await a.query('SELECT * FROM "missing"').then(() => 'none', (err) => err.code);
      const long = await a.query("SELECT repeat('y', 1000) AS v FROM generate_series(1, 1000)");
      out.longRows = long.rows.length;
      out.longBytes = long.rows.reduce((n, r) => n + r.v.length, 0);
      // A transaction left open by a connection that goes away is rolled back before the next one runs.
      const b = await connect();
      b.on('error', () => undefined);
      await b.query('BEGIN');
      await b.query("INSERT INTO \\"kept\\" VALUES ('never')");
      b.connection.stream.destroy();
      await new Promise((r) => setTimeout(r, 200));
      out.afterAbandoned = (await a.query("SELECT count(*)::int AS n FROM \\"kept\\" WHERE v = 'never'")).rows[0].n;
      out.inTransactionAfter = (await a.query('SELECT 1 AS one')).rows[0].one;
      await a.end();
      await e.close();
      process.stdout.write(JSON.stringify(out));
    })().catch((err) => { process.stderr.write(String(err && err.stack || err)); process.exit(1); });`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-r', path.join(ROOT, 'bin/ts-register.js'), '-e', script], { cwd: ROOT, timeout: 240_000, maxBuffer: 4 * 1024 * 1024 }, (err, out, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(JSON.parse(out) as Record<string, unknown>);
    });
  });
}

describe('embedded engine: worker thread and main thread', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

  it.each(['worker', 'main'] as const)('on the %s thread: answers, errors, long answers, an abandoned transaction, and a restart', async (thread) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `openwop-embedded-${thread}-`));
    dirs.push(dir);
    const first = await onEngine(dir, thread);
    expect(first).toEqual({ answer: 1, before: 0, error: '42P01', longRows: 1000, longBytes: 1_000_000, afterAbandoned: 0, inTransactionAfter: 1 });
    // The same folder again: what the first start wrote is there.
    const second = await onEngine(dir, thread);
    expect(second.before).toBe(1);
  }, 300_000);
});
