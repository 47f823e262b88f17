/**
 * Named prepared statements on the embedded engine: every connection of its wire server shares the
 * one backend session, and the server keeps each connection's statement names apart there
 * (src/platform/database/embedded-statement-names.ts). Two connections preparing the same name with
 * different texts at once each run their own; what a connection prepared is closed when it goes away
 * (nothing is left in pg_prepared_statements, and a new connection prepares the name afresh);
 * `DEALLOCATE name` and `DEALLOCATE ALL` act on the connection's own statements; an error in the
 * middle of a pipelined extended-protocol batch skips to its Sync and the next group runs (and the
 * backend is handed on). The engine runs in a child process (it cannot start inside a Jest worker).
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '../..');

/** Runs `body` (an async function body with `e`, the engine, `connect()` and `out`) in a child process on an engine of its own. */
function onEngine(dir: string, body: string): Promise<Record<string, unknown>> {
  const script = `
    const net = require('node:net');
    const { startEmbeddedPostgres } = require(${JSON.stringify(path.join(ROOT, 'src/platform/database/embedded-postgres.ts'))});
    const { Client } = require('pg');
    (async () => {
      const e = await startEmbeddedPostgres(${JSON.stringify(dir)}, { thread: 'main' });
      const connect = async () => { const c = new Client({ host: e.socketDir, port: e.port, user: 'postgres', database: 'postgres' }); c.on('error', () => undefined); await c.connect(); return c; };
      const prepared = async (c) => (await c.query('SELECT name FROM pg_prepared_statements ORDER BY 1')).rows.map((r) => r.name);
      const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
      const out = {};
      ${body}
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

/** Frontend messages, a raw socket on the engine and its answers by message type (for the pipelined batch). */
const RAW = `
  const msg = (type, body) => { const h = Buffer.alloc(5); h.write(type, 0, 'latin1'); h.writeInt32BE(body.length + 4, 1); return Buffer.concat([h, body]); };
  const cstr = (s) => Buffer.from(s + '\\0');
  const i16 = (n) => { const b = Buffer.alloc(2); b.writeInt16BE(n); return b; };
  const i32 = (n) => { const b = Buffer.alloc(4); b.writeInt32BE(n); return b; };
  const parse = (name, sql) => msg('P', Buffer.concat([cstr(name), cstr(sql), i16(0)]));
  const bind = (name, value) => msg('B', Buffer.concat([cstr(''), cstr(name), i16(0), i16(1), i32(Buffer.byteLength(value)), Buffer.from(value), i16(0)]));
  const execute = () => msg('E', Buffer.concat([cstr(''), i32(0)]));
  const sync = () => msg('S', Buffer.alloc(0));
  /** Opens a raw connection, sends \`bytes\` after the startup, and answers the messages up to the \`readies\`-th ReadyForQuery. */
  const raw = (bytes, readies) => new Promise((resolve, reject) => {
    const s = net.createConnection(require('node:path').join(e.socketDir, '.s.PGSQL.5432'));
    let buf = Buffer.alloc(0); let started = false; const seen = [];
    s.on('error', reject);
    s.on('connect', () => { const body = Buffer.concat([i32(196608), cstr('user'), cstr('postgres'), cstr('database'), cstr('postgres'), Buffer.from([0])]); s.write(Buffer.concat([i32(body.length + 4), body])); });
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 5 && buf.length >= 1 + buf.readInt32BE(1)) {
        const type = String.fromCharCode(buf[0]); const body = buf.subarray(5, 1 + buf.readInt32BE(1)); buf = buf.subarray(1 + buf.readInt32BE(1));
        if (!started) { if (type === 'Z') { started = true; s.write(bytes); } continue; }
        if (type === 'E') { const f = {}; for (let i = 0; body[i]; ) { const end = body.indexOf(0, i + 1); f[String.fromCharCode(body[i])] = body.toString('utf8', i + 1, end); i = end + 1; } seen.push('E:' + f.C); }
        else if (type === 'D') seen.push('D:' + body.toString('utf8', 6));
        else if (type === 'Z') seen.push('Z:' + String.fromCharCode(body[0]));
        else seen.push(type);
        if (seen.filter((x) => x.startsWith('Z:')).length === readies) { s.end(msg('X', Buffer.alloc(0))); resolve(seen); }
      }
    });
  });
`;

describe('embedded engine: named prepared statements per connection', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
  const folder = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-embedded-statements-'));
    dirs.push(dir);
    return dir;
  };

  it('two connections preparing the same name concurrently each run their own text; closing one leaves nothing prepared', async () => {
    const out = await onEngine(
      folder(),
      `
      const conns = await Promise.all(Array.from({ length: 8 }, () => connect()));
      // Every connection prepares "same" with its own text, 25 times over, all at once.
      const answers = await Promise.all(conns.map((c, k) => Promise.all(Array.from({ length: 25 }, (_, j) =>
        c.query({ name: 'same', text: 'SELECT $1::int + ' + (k * 1000) + ' AS n', values: [j] }).then((r) => r.rows[0].n === k * 1000 + j)))));
      out.allOwn = answers.every((a) => a.every(Boolean));
      out.preparedWhileOpen = (await prepared(conns[0])).length;
      // Another statement of connection 0 whose text differs from connection 1's same name.
      await conns[1].query({ name: 'other', text: "SELECT 'one' AS v" });
      out.otherOn0 = (await conns[0].query({ name: 'other', text: "SELECT 'zero' AS v" })).rows[0].v;
      await Promise.all(conns.slice(1).map((c) => c.end()));
      await sleep(200);
      out.afterClose = await prepared(conns[0]);
      // A new connection prepares the name afresh (nothing left under it, no clash).
      const again = await connect();
      out.reused = (await again.query({ name: 'same', text: 'SELECT $1::text AS n', values: ['fresh'] })).rows[0].n;
      // DEALLOCATE by name (the driver re-prepares this way) and DEALLOCATE ALL: this connection's only.
      await again.query({ name: 'two', text: 'SELECT 2 AS n' });
      await again.query('DEALLOCATE "same"');
      out.afterDeallocate = (await prepared(again)).length;
      out.sameOnZero = (await conns[0].query({ name: 'same', text: 'SELECT $1::int + 0 AS n', values: [1] }).then((r) => r.rows[0].n));
      const all = await again.query('DEALLOCATE ALL');
      out.deallocateAllTag = all.command;
      out.afterDeallocateAll = (await prepared(again)).length;
      out.zeroStillRuns = (await conns[0].query({ name: 'other', text: "SELECT 'zero' AS v" })).rows[0].v;
      await again.end();
      // A connection that goes away with a transaction open and statements prepared: both are cleared.
      const gone = await connect();
      await gone.query({ name: 'inside', text: 'SELECT 1 AS n' });
      await gone.query('BEGIN');
      await gone.query({ name: 'inside2', text: 'SELECT 2 AS n' });
      gone.connection.stream.destroy();
      await sleep(200);
      out.afterAbandoned = (await prepared(conns[0])).length;
      await conns[0].end();
      const last = await connect();
      out.finallyPrepared = await prepared(last);
      await last.end();
      `,
    );
    expect(out).toEqual({
      allOwn: true,
      // pg_prepared_statements lists the session's statements: the eight connections' "same".
      preparedWhileOpen: 8,
      otherOn0: 'zero',
      afterClose: ['w1_other', 'w1_same'],
      reused: 'fresh',
      afterDeallocate: 3,
      sameOnZero: 1,
      deallocateAllTag: 'DEALLOCATE',
      afterDeallocateAll: 2,
      zeroStillRuns: 'zero',
      afterAbandoned: 2,
      finallyPrepared: [],
    });
  }, 300_000);

  it("the host's own pool on the embedded engine sends its hot statements prepared (and OPENWOP_DB_PREPARED_STATEMENTS=false still turns them off)", async () => {
    const script = (prepared: boolean) => `
      const { openDatabase } = require(${JSON.stringify(path.join(ROOT, 'src/platform/database/data-source.factory.ts'))});
      const { preparedStatement, runPrepared } = require(${JSON.stringify(path.join(ROOT, 'src/platform/database/prepared-statement.ts'))});
      (async () => {
        const db = await openDatabase({ dataDir: ${JSON.stringify(folder())}, database: { poolSize: 2, connectTimeoutMs: 5000, statementTimeoutMs: 15000, lockTimeoutMs: 10000, idleInTransactionTimeoutMs: 60000, preparedStatements: ${prepared} } }, { entities: [], migrations: [] });
        const stmt = preparedStatement('embedded_spec', 'SELECT $1::int * 2 AS "n"');
        const rows = await runPrepared(db.dataSource, stmt, [21]);
        const names = (await db.dataSource.query('SELECT name FROM pg_prepared_statements ORDER BY 1')).map((r) => r.name);
        await db.close();
        process.stdout.write(JSON.stringify({ n: rows[0].n, names }));
      })().catch((err) => { process.stderr.write(String(err && err.stack || err)); process.exit(1); });`;
    const run = (prepared: boolean) =>
      new Promise<{ n: number; names: string[] }>((resolve, reject) => {
        execFile(process.execPath, ['-r', path.join(ROOT, 'bin/ts-register.js'), '-e', script(prepared)], { cwd: ROOT, timeout: 240_000 }, (err, out, stderr) => {
          if (err) reject(new Error(`${err.message}\n${stderr}`));
          else resolve(JSON.parse(out) as { n: number; names: string[] });
        });
      });
    const on = await run(true);
    expect(on.n).toBe(42);
    expect(on.names).toHaveLength(1);
    expect(on.names[0]).toMatch(/^w\d+_openwop_embedded_spec$/);
    expect(await run(false)).toEqual({ n: 42, names: [] });
  }, 300_000);

  it('an error in the middle of a pipelined batch skips to its Sync, the next group runs, and other connections get the backend', async () => {
    const out = await onEngine(
      folder(),
      `${RAW}
      const other = await connect();
      const bytes = Buffer.concat([
        parse('div', 'SELECT 10 / $1::int AS q'), bind('div', '0'), execute(), bind('div', '1'), execute(), sync(),
        bind('div', '2'), execute(), sync(),
        parse('div', 'SELECT 1'), sync(),
        bind('div', '5'), execute(), sync(),
      ]);
      const [seen, otherAnswer] = await Promise.all([raw(bytes, 4), other.query({ name: 'div', text: 'SELECT $1::int * 3 AS q', values: [7] })]);
      out.seen = seen;
      out.other = otherAnswer.rows[0].q;
      out.afterwards = (await other.query({ name: 'div', text: 'SELECT $1::int * 3 AS q', values: [2] })).rows[0].q;
      await sleep(200);
      out.prepared = await prepared(other);
      await other.end();
      `,
    );
    expect(out).toEqual({
      seen: [
        // Parse, then division by zero (planning the Bind folds the constant): the rest is skipped up to the Sync.
        '1', 'E:22012', 'Z:I',
        // The statement stays prepared: the next group binds it.
        '2', 'D:5', 'C', 'Z:I',
        // Preparing the name again fails (it exists), as on a server.
        'E:42P05', 'Z:I',
        '2', 'D:2', 'C', 'Z:I',
      ],
      other: 21,
      afterwards: 6,
      prepared: ['w1_div'],
    });
  }, 300_000);
});
