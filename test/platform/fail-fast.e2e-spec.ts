import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { Client } from 'pg';
import { createScratchDatabase } from '../support/scratch-db';
import { tempDirs } from '../support/temp-dirs';

const BIN = path.join(__dirname, '../../bin/openwop-host.js');

interface Exit {
  code: number | null;
  killed: boolean;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs the real command line; a process still alive after `timeoutMs` is killed and reported as such. */
const temp = tempDirs();

function cli(args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<Exit> {
  const started = Date.now();
  const fullEnv: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', OPENWOP_SCHEDULER_ENABLED: 'false', OPENWOP_BOOTSTRAP_KEY: 'false', ...env };
  if (!env.DATABASE_URL) delete fullEnv.DATABASE_URL;
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: fullEnv, timeout: timeoutMs, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      const e = err as (Error & { code?: number | string; killed?: boolean }) | null;
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, killed: !!e?.killed, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** stderr of a failed start: exactly one line. */
function oneLine(stderr: string): string {
  const lines = stderr.split('\n').filter((l) => l.trim());
  expect(lines).toHaveLength(1);
  return lines[0];
}

function tmpDir(): string {
  return temp.make('openwop-failfast-');
}

describe('a start that cannot complete exits non-zero with one clear line', () => {
  it('exits when the port is taken (instead of staying alive without a listener)', async () => {
    const db = await createScratchDatabase();
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const res = await cli(['serve'], { DATABASE_URL: db.url, PORT: String(port), HOST: '127.0.0.1', OPENWOP_DATA_DIR: tmpDir() });
      expect(res.killed).toBe(false);
      expect(res.code).toBe(1);
      expect(oneLine(res.stderr)).toBe(`openwop-host cannot start (listen): cannot listen on 127.0.0.1:${port}: the address is already in use`);
    } finally {
      blocker.close();
      await db.drop();
    }
  }, 90_000);

  it('exits when the database is unreachable, naming it without its password', async () => {
    const res = await cli(['serve'], { DATABASE_URL: 'postgres://owner:s3cr3t-pw@127.0.0.1:1/nowhere', PORT: '0', OPENWOP_DATA_DIR: tmpDir() });
    expect(res.killed).toBe(false);
    expect(res.code).toBe(1);
    const line = oneLine(res.stderr);
    expect(line).toMatch(/^openwop-host cannot start \(database\): cannot open the database 127\.0\.0\.1:1\/nowhere: .*ECONNREFUSED/);
    expect(res.stderr + res.stdout).not.toContain('s3cr3t-pw');
  }, 90_000);

  it('exits when a migration fails', async () => {
    const db = await createScratchDatabase();
    try {
      // A table in the way of the first migration.
      const c = new Client({ connectionString: db.url });
      await c.connect();
      await c.query('CREATE TABLE "api_key" (x int)');
      await c.end();
      const res = await cli(['serve'], { DATABASE_URL: db.url, PORT: '0', OPENWOP_DATA_DIR: tmpDir() });
      expect(res.killed).toBe(false);
      expect(res.code).toBe(1);
      expect(oneLine(res.stderr)).toMatch(/^openwop-host cannot start \(migrations\): cannot apply the database migrations: .*api_key.*already exists/);
    } finally {
      await db.drop();
    }
  }, 90_000);

  it('exits when a plugin cannot load and plugins are strict', async () => {
    const db = await createScratchDatabase();
    try {
      const res = await cli(['serve'], { DATABASE_URL: db.url, PORT: '0', OPENWOP_DATA_DIR: tmpDir(), OPENWOP_PLUGINS: './no-such-plugin', OPENWOP_PLUGINS_STRICT: 'true' });
      expect(res.killed).toBe(false);
      expect(res.code).toBe(1);
      expect(oneLine(res.stderr)).toMatch(/^openwop-host cannot start \(plugins\): cannot load the plugins: .*no-such-plugin/);
    } finally {
      await db.drop();
    }
  }, 90_000);

  it('exits on invalid configuration', async () => {
    const res = await cli(['serve'], { PORT: 'eighty', OPENWOP_DATA_DIR: tmpDir() });
    expect(res.code).toBe(1);
    expect(oneLine(res.stderr)).toBe('configuration error: PORT must be a whole number, got "eighty"');
    const file = path.join(tmpDir(), 'bad.json');
    fs.writeFileSync(file, '{"tools": {"mcpServers": 3}}');
    const bad = await cli(['serve'], { OPENWOP_CONFIG: file, OPENWOP_DATA_DIR: tmpDir() });
    expect(bad.code).toBe(1);
    expect(oneLine(bad.stderr)).toMatch(/^configuration error: OPENWOP_CONFIG: .*bad\.json is invalid/);
  }, 60_000);

  it('refuses malformed OPENWOP_CREDENTIAL_KEYS before it creates or opens any database', async () => {
    const parent = tmpDir();
    const dataDir = path.join(parent, 'data');
    try {
      for (const [keys, reason] of [
        ['bad', 'each entry is id:base64key'],
        [`k1:${Buffer.alloc(16).toString('base64')}`, 'key "k1" must be 32 bytes in standard base64'],
        [`k1:${Buffer.alloc(32).toString('base64')},k1:${Buffer.alloc(32, 1).toString('base64')}`, 'key id "k1" appears twice'],
      ]) {
        const res = await cli(['serve'], { OPENWOP_DATA_DIR: dataDir, PORT: '0', OPENWOP_CREDENTIAL_KEYS: keys });
        expect(res.code).toBe(1);
        const line = oneLine(res.stderr);
        expect(line).toMatch(/^configuration error: OPENWOP_CREDENTIAL_KEYS: /);
        expect(line).toContain(reason);
        // Nothing was started: no log line, no database folder.
        expect(res.stdout).toBe('');
        expect(fs.existsSync(dataDir)).toBe(false);
      }
    } finally {
      fs.rmSync(parent, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('keys create before the first serve', () => {
  it('migrates a fresh embedded data folder first, then mints the key', async () => {
    const dataDir = tmpDir();
    try {
      const res = await cli(['keys', 'create', '--tenant', 'acme', '--principal', 'ops', '--role', 'viewer', '--json'], { OPENWOP_DATA_DIR: dataDir }, 120_000);
      expect(res.code).toBe(0);
      expect(res.stderr).toMatch(/applied \d+ pending migration\(s\) first/);
      expect(JSON.parse(res.stdout).key).toMatch(/^owk_/);
      const listed = await cli(['keys', 'list', '--tenant', 'acme', '--json'], { OPENWOP_DATA_DIR: dataDir }, 120_000);
      expect(listed.code).toBe(0);
      expect(listed.stderr).not.toMatch(/applied/);
      expect((JSON.parse(listed.stdout) as Array<{ principal: string }>).map((k) => k.principal)).toEqual(['ops']);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);

  it('says exactly what to run when migrations on start are off', async () => {
    const db = await createScratchDatabase();
    try {
      const res = await cli(['keys', 'create', '--tenant', 'acme', '--principal', 'ops', '--role', 'viewer'], { DATABASE_URL: db.url, OPENWOP_MIGRATE_ON_START: 'false', OPENWOP_DATA_DIR: tmpDir() });
      expect(res.code).toBe(1);
      expect(oneLine(res.stderr)).toMatch(/pending migration\(s\); run `openwop-host migrate` first/);
      const c = new Client({ connectionString: db.url });
      await c.connect();
      const { rows } = await c.query(`SELECT to_regclass('public.api_key') AS t`);
      await c.end();
      expect(rows[0].t).toBeNull();
    } finally {
      await db.drop();
    }
  }, 90_000);
});
