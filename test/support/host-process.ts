import { ChildProcess, fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { seedEmbeddedDataDir } from './embedded-template';

export interface HostProcess {
  proc: ChildProcess;
  base: string;
  key: string;
  /** The data folder (embedded engine) of the host. */
  dataDir: string;
  /** Every line the host wrote on stdout and stderr. */
  logs: string[];
  /** A SQL query on the host's database (through the embedded socket, or DATABASE_URL). */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  http(method: string, url: string, opts?: { body?: unknown; headers?: Record<string, string>; token?: string }): Promise<{ status: number; headers: Headers; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any
  close(): Promise<void>;
}

/**
 * Starts test/support/host-process-main.ts in a process of its own: with no DATABASE_URL in `env`,
 * on an embedded engine in a fresh data folder, as a new user's `npm start` would. A data folder
 * without a database gets a copy of the run's migrated template (test/support/embedded-template.ts)
 * unless `freshDatabase` asks for the first start's own initdb and migrations.
 */
export async function startHostProcess(opts: { env?: Record<string, string>; chains?: { tenant: string; name: string; chains: Record<string, Record<string, unknown>> }; scopes?: string[]; freshDatabase?: boolean } = {}): Promise<HostProcess> {
  const dataDir = opts.env?.OPENWOP_DATA_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-hostproc-'));
  if (!opts.env?.DATABASE_URL && !opts.freshDatabase) await seedEmbeddedDataDir(dataDir);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SWC_NODE_PROJECT: path.join(__dirname, '../../tsconfig.json'),
    OPENWOP_DATA_DIR: dataDir,
    OPENWOP_BOOTSTRAP_KEY: 'false',
    LOG_LEVEL: 'info',
    ...opts.env,
  };
  if (!opts.env?.DATABASE_URL) delete env.DATABASE_URL;
  if (opts.chains) {
    const file = path.join(dataDir, 'test-chains.json');
    fs.writeFileSync(file, JSON.stringify(opts.chains));
    env.OPENWOP_TEST_CHAINS = file;
  }
  env.OPENWOP_TEST_KEY_SCOPES = (opts.scopes ?? ['runs:read']).join(',');
  // The project's own require hook (bin/ts-register.js, as `npm start`): it keeps each compiled file, so
  // a test's second host does not compile src/ again.
  const proc = fork(path.join(__dirname, 'host-process-main.ts'), [], { execArgv: ['-r', path.join(__dirname, '../../bin/ts-register.js')], env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  const logs: string[] = [];
  let partial = '';
  const collect = (d: Buffer) => {
    const text = partial + String(d);
    const lines = text.split('\n');
    partial = lines.pop() ?? '';
    logs.push(...lines.filter(Boolean));
  };
  proc.stdout!.on('data', collect);
  proc.stderr!.on('data', collect);
  const ready = await new Promise<{ port: number; key: string; socketDir?: string }>((resolve, reject) => {
    proc.once('message', (m) => resolve(m as { port: number; key: string; socketDir?: string }));
    proc.once('exit', (code) => reject(new Error(`the host process exited with ${code}:\n${logs.join('\n')}`)));
  });
  const base = `http://127.0.0.1:${ready.port}`;
  let db: Client | undefined;
  const connect = async () => {
    if (db) return db;
    const c = new Client(opts.env?.DATABASE_URL ? { connectionString: opts.env.DATABASE_URL } : { host: ready.socketDir, port: 5432, user: 'postgres', database: 'postgres' });
    c.on('error', () => undefined);
    await c.connect();
    db = c;
    return c;
  };
  return {
    proc,
    base,
    key: ready.key,
    dataDir,
    logs,
    async query<T>(sql: string, params: unknown[] = []) {
      return (await (await connect()).query(sql, params)).rows as T[];
    },
    async http(method, url, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      if (o.token ?? ready.key) headers.authorization = `Bearer ${o.token ?? ready.key}`;
      if (o.body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${base}${url}`, { method, headers, body: o.body !== undefined ? JSON.stringify(o.body) : undefined });
      const text = await res.text();
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        /* not JSON */
      }
      return { status: res.status, headers: res.headers, body };
    },
    async close() {
      await db?.end().catch(() => undefined);
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        const t = setTimeout(() => proc.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(t);
      }
      if (!opts.env?.OPENWOP_DATA_DIR) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
