/**
 * The embedded engine's memory settings: a start applies the memory-tuned defaults (16 MB of shared
 * buffers: every buffer is resident memory of the host, and the engine's memory never shrinks), an
 * OPENWOP_EMBEDDED_PG_SETTINGS-style override wins over them, and a restart on the same folder keeps
 * what the previous start wrote. The engine runs in a child process (it cannot start inside a Jest
 * worker), through startEmbeddedPostgres and a pg connection on its socket.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '../..');

/** Starts the engine on `dir` with `settings`, runs `sql` through its socket, answers the rows as JSON, and closes it. */
function onEngine(dir: string, settings: Record<string, string>, sql: string[]): Promise<unknown[][]> {
  const script = `
    const { startEmbeddedPostgres } = require(${JSON.stringify(path.join(ROOT, 'src/platform/database/embedded-postgres.ts'))});
    const { Client } = require('pg');
    (async () => {
      const e = await startEmbeddedPostgres(${JSON.stringify(dir)}, { settings: ${JSON.stringify(settings)} });
      const c = new Client({ host: e.socketDir, port: e.port, user: 'postgres', database: 'postgres' });
      await c.connect();
      const out = [];
      for (const q of ${JSON.stringify(sql)}) out.push((await c.query(q)).rows);
      await c.end();
      await e.close();
      process.stdout.write(JSON.stringify(out));
    })().catch((err) => { process.stderr.write(String(err && err.stack || err)); process.exit(1); });`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-r', path.join(ROOT, 'bin/ts-register.js'), '-e', script], { cwd: ROOT, timeout: 240_000, maxBuffer: 4 * 1024 * 1024 }, (err, out, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(JSON.parse(out) as unknown[][]);
    });
  });
}

describe('embedded engine: memory settings', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-embedded-settings-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('starts with 16 MB of shared buffers and the other memory-tuned defaults, and keeps what it wrote', async () => {
    const [buffers, work, wal] = await onEngine(dir, {}, [
      'SHOW shared_buffers',
      'SHOW work_mem',
      'SHOW wal_buffers',
      `CREATE TABLE "kept" ("v" text)`,
      `INSERT INTO "kept" VALUES ('written before the restart')`,
    ]);
    expect(buffers).toEqual([{ shared_buffers: '16MB' }]);
    expect(work).toEqual([{ work_mem: '4MB' }]);
    expect(wal).toEqual([{ wal_buffers: '1MB' }]);
  }, 300_000);

  it('takes an operator override over the defaults, on a restart that keeps the data', async () => {
    const [buffers, rows] = await onEngine(dir, { shared_buffers: '24MB' }, ['SHOW shared_buffers', 'SELECT "v" FROM "kept"']);
    expect(buffers).toEqual([{ shared_buffers: '24MB' }]);
    expect(rows).toEqual([{ v: 'written before the restart' }]);
  }, 300_000);
});
