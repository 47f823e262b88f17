/**
 * Benchmark harness: boots the real host listening on 127.0.0.1 (ephemeral port, fresh database),
 * drives it with autocannon, and compares against a baseline measured in the same run. Results are
 * ratios, never absolute pass/fail timings (the machine is small and noisy).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { execFileSync, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import autocannon from 'autocannon';
import Fastify, { FastifyInstance } from 'fastify';
import * as pg from 'pg';
import { Client, Pool } from 'pg';
import { createHost, Host } from '../src/bootstrap';
import { RUNS_CHANNEL } from '../src/platform/database/database-notifications';
import { loadHostConfig } from '../src/platform/config/host-config';

export interface Measurement {
  label: string;
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
  /** Responses with a 2xx status, and the seconds the load ran. */
  ok: number;
  seconds: number;
}

export async function measure(
  label: string,
  url: string,
  opts: { connections?: number; durationSec?: number; headers?: Record<string, string>; method?: 'GET' | 'POST'; body?: string } = {},
): Promise<Measurement> {
  const start = process.hrtime.bigint();
  const result = await autocannon({ url, connections: opts.connections ?? 50, duration: opts.durationSec ?? 5, headers: opts.headers, method: opts.method ?? 'GET', body: opts.body });
  return {
    label,
    requestsPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
    ok: result['2xx'],
    seconds: Number(process.hrtime.bigint() - start) / 1e9,
  };
}

export function report(baseline: Measurement, subject: Measurement, targets: { minThroughputRatio?: number; maxP99Ratio?: number } = {}): void {
  const throughput = subject.requestsPerSec / baseline.requestsPerSec;
  const p99 = subject.p99Ms / Math.max(baseline.p99Ms, 0.001);
  const row = (m: Measurement) => `${m.label.padEnd(40)} ${m.requestsPerSec.toFixed(0).padStart(8)} req/s  p50 ${String(m.p50Ms).padStart(5)} ms  p99 ${String(m.p99Ms).padStart(5)} ms  errors ${m.errors} non-2xx ${m.non2xx}`;
  console.log(row(baseline));
  console.log(row(subject));
  const t = targets.minThroughputRatio !== undefined ? ` (target ≥ ${targets.minThroughputRatio}: ${throughput >= targets.minThroughputRatio ? 'met' : 'NOT met'})` : '';
  const p = targets.maxP99Ratio !== undefined ? ` (target ≤ ${targets.maxP99Ratio}: ${p99 <= targets.maxP99Ratio ? 'met' : 'NOT met'})` : '';
  console.log(`throughput ratio ${throughput.toFixed(2)}×${t}; p99 ratio ${p99.toFixed(2)}×${p}`);
}

/** A bare Fastify server answering one route with a pre-serialized body: the baseline. */
export async function bareServer(path: string, body: string): Promise<{ url: string; close(): Promise<void> }> {
  const app: FastifyInstance = Fastify({ logger: false });
  app.get(path, (_req, reply) => reply.type('application/json; charset=utf-8').send(body));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return { url: `http://127.0.0.1:${port}${path}`, close: () => app.close() };
}

/**
 * Rate limits stay on in benchmarks (their bookkeeping is part of the measured cost) with budgets no
 * load generator reaches; an explicit OPENWOP_RATE_LIMIT_* in the environment wins.
 */
export const BENCH_RATE_BUDGETS: Record<string, string> = {
  OPENWOP_RATE_LIMIT_READ: '999999999/1s',
  OPENWOP_RATE_LIMIT_WRITE: '999999999/1s',
  OPENWOP_RATE_LIMIT_PUBLIC: '999999999/1s',
};

export interface BenchHost {
  host: Host;
  baseUrl: string;
  databaseUrl: string;
  close(): Promise<void>;
}

/** The host on a fresh database of the local PostgreSQL server (DATABASE_URL, default 127.0.0.1:5432). */
export async function startBenchHost(env: Record<string, string> = {}): Promise<BenchHost> {
  const admin = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `owbench_${randomBytes(5).toString('hex')}`;
  const c = new Client({ connectionString: admin });
  await c.connect();
  await c.query(`CREATE DATABASE "${name}"`);
  await c.end();
  const u = new URL(admin);
  u.pathname = `/${name}`;
  const config = loadHostConfig({ LOG_LEVEL: 'warn', OPENWOP_SCHEDULER_ENABLED: 'false', OPENWOP_BOOTSTRAP_KEY: 'false', ...BENCH_RATE_BUDGETS, ...env, DATABASE_URL: u.toString() });
  const host = await createHost(config);
  await host.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = host.app.getHttpServer().address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    host,
    baseUrl: `http://127.0.0.1:${port}`,
    databaseUrl: u.toString(),
    async close() {
      // Let requests autocannon left in flight drain before the database goes away.
      await new Promise((r) => setTimeout(r, 1000));
      await host.close();
      const d = new Client({ connectionString: admin });
      await d.connect();
      await d.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await d.end();
    },
  };
}

const ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function adminQuery(sql: string): Promise<void> {
  const c = new Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** A fresh database on the server of DATABASE_URL (else the local one) for one benchmark, and its drop. */
export async function createBenchDatabase(prefix: string): Promise<{ name: string; url: URL; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  await adminQuery(`CREATE DATABASE "${name}"`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return { name, url, drop: () => adminQuery(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}

/**
 * `count` more pending workflow runs of `definition`, as POST /v1/runs writes them when the replica
 * has no free slot (unclaimed, announced on the runs channel), spread over `tenants` tenants (`tenant-<i>`).
 */
export async function insertPendingRuns(
  pool: Pool,
  count: number,
  o: { definition: { workflowId: string }; kind?: string; tenants?: number; scopes?: string[] },
): Promise<void> {
  await pool.query(
    `WITH ins AS (
       INSERT INTO "run" ("tenant", "principal", "kind", "status", "metadata", "workflow_id", "definition_key", "inputs", "configurable", "principal_key")
       SELECT 'tenant-' || (i % $3::int), 'bench', $4, 'pending', '{}'::jsonb, $5, run_definition_ref('tenant-' || (i % $3::int), $1::jsonb), '{}'::jsonb, '{}'::jsonb, run_principal_ref('tenant-' || (i % $3::int), NULL, $6::text[])
       FROM generate_series(1, $2::int) AS i RETURNING 1
     )
     SELECT pg_notify('${RUNS_CHANNEL}', '') WHERE EXISTS (SELECT 1 FROM ins)`,
    [JSON.stringify(o.definition), count, o.tenants ?? 1, o.kind ?? 'workflow', o.definition.workflowId, o.scopes ?? []],
  );
}

/** utime + stime of one process, in jiffies, or undefined when it is gone or is not named `name`. */
function processJiffies(pid: string, name?: string): number | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // exited meanwhile, or no /proc
  }
  const close = stat.lastIndexOf(')');
  if (name !== undefined && stat.slice(stat.indexOf('(') + 1, close) !== name) return undefined;
  const rest = stat.slice(close + 2).split(' ');
  return Number(rest[11]) + Number(rest[12]); // utime, stime (fields 14 and 15)
}

/** Jiffies of CPU time used so far: the whole machine (busy and total) and every `postgres` process. */
function cpuJiffies(): { busy: number; total: number; postgres: Map<string, number> } | undefined {
  try {
    const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const total = fields.reduce((a, b) => a + b, 0);
    // idle and iowait are the not-busy columns.
    const busy = total - fields[3] - (fields[4] ?? 0);
    const postgres = new Map<string, number>();
    for (const pid of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const used = processJiffies(pid, 'postgres');
      if (used !== undefined) postgres.set(pid, used);
    }
    return { busy, total, postgres };
  } catch {
    return undefined; // no /proc: not Linux
  }
}

export interface CpuReading {
  /** Cores the machine had. */
  cores: number;
  /** Cores busy on average over the window, all processes (0..cores). */
  busyCores: number;
  /** Cores used on average by PostgreSQL's processes (those still alive at the end of the window). */
  postgresCores: number;
}

/**
 * Measures how busy the machine was between start and stop (Linux /proc; undefined elsewhere). A
 * throughput ratio between one and two replicas means little without it: when one instance and its
 * database already keep every core busy, a second replica has nothing left to run on.
 */
export function cpuMeter(): { stop(): CpuReading | undefined } {
  const start = cpuJiffies();
  const cores = os.cpus().length;
  return {
    stop() {
      const end = cpuJiffies();
      if (!start || !end || end.total === start.total) return undefined;
      const totalPerCore = (end.total - start.total) / cores;
      let postgres = 0;
      for (const [pid, used] of end.postgres) postgres += used - (start.postgres.get(pid) ?? 0);
      return { cores, busyCores: (end.busy - start.busy) / totalPerCore, postgresCores: postgres / totalPerCore };
    },
  };
}

export function formatCpu(c: CpuReading | undefined): string {
  return c ? `${c.busyCores.toFixed(2)} of ${c.cores} cores busy (PostgreSQL ${c.postgresCores.toFixed(2)})` : 'CPU use not measured (no /proc)';
}

/** The application_name of the benchmark's own connections (feeders, counters). */
const BENCH_APP = 'openwop-bench';
const benchClients = new WeakSet<object>();

/**
 * A pool for the benchmark's own statements (feeding backlogs, counting): its statements and its
 * backends are not counted as the measured system's (see countDriverQueries and dbActivityMeter).
 */
export function benchPool(url: string, max = 3): Pool {
  const pool = new Pool({ connectionString: url, max, application_name: BENCH_APP });
  pool.on('connect', (c) => benchClients.add(c));
  // An idle connection dropped with its database (DROP DATABASE ... WITH (FORCE)) is no failure.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * Every pg pool in this process (the host's, graphile-worker's, pg-boss's) keeps its error
 * listener-less idle connections from crashing the benchmark: a side's database is dropped WITH
 * (FORCE) at teardown, which terminates any idle connection the side left open (57P01), and pg-pool
 * emits that on the pool, fatal when nobody listens. A side's own listeners still hear every error.
 */
export function toleratePoolTeardown(): void {
  const proto = pg.Pool.prototype as unknown as { connect: (...a: unknown[]) => unknown; __benchTolerant?: boolean };
  if (proto.__benchTolerant) return;
  proto.__benchTolerant = true;
  const connect = proto.connect;
  proto.connect = function (this: pg.Pool, ...args: unknown[]) {
    const self = this as pg.Pool & { __benchListened?: boolean };
    if (!self.__benchListened) {
      self.__benchListened = true;
      self.on('error', () => undefined);
    }
    return connect.apply(this, args);
  };
}

/** What a statement was sent for, as the benchmark labels the work it drives (`submit`, `execute`...). */
const queryRole = new AsyncLocalStorage<string>();

let labelling = true;

/**
 * Turns the role labels on or off. They ride on an AsyncLocalStorage, which turns on Node's
 * async-context tracking for every promise of the process (the host itself enters it only while
 * tracing): a phase that does not report by role runs without it, so the labels do not slow what
 * it measures. Off, statements count as `background`.
 */
export function labelRoles(on: boolean): void {
  labelling = on;
  if (!on) queryRole.disable();
}

/** Runs `fn` (and everything it starts) with its statements counted under `role` (while labels are on). */
export function withRole<T>(role: string, fn: () => T): T {
  return labelling ? queryRole.run(role, fn) : fn();
}

/** The statements sent per database and role; `bench` holds the benchmark's own. */
const statements = new Map<string, Map<string, number>>();
/** With tracing on: per database, the statements by `role: text` (whitespace folded, cut at 160 characters). */
const statementTexts = new Map<string, Map<string, number>>();
let counting = false;
let tracing = false;

function bump(map: Map<string, Map<string, number>>, database: string, key: string): void {
  const byKey = map.get(database) ?? new Map<string, number>();
  map.set(database, byKey);
  byKey.set(key, (byKey.get(key) ?? 0) + 1);
}

/**
 * Counts every statement the `pg` driver sends (one round trip each), by database and by the role
 * of the work that sent it (unlabelled work counts as `background`); with `trace`, also by text.
 * The host (through TypeORM), graphile-worker and pg-boss all speak to PostgreSQL through this one driver.
 */
export function countDriverQueries(opts: { trace?: boolean } = {}): void {
  tracing ||= !!opts.trace;
  if (counting) return;
  counting = true;
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  // A pool hands a freed connection to the next waiting callback from the code that freed it: bound
  // to the caller, the callback (and the statement it sends) keeps the caller's role.
  const pool = pg.Pool.prototype as unknown as { connect: (cb?: unknown) => unknown };
  const connect = pool.connect;
  pool.connect = function (this: unknown, cb?: unknown) {
    if (typeof cb !== 'function') return connect.call(this, cb);
    const role = queryRole.getStore();
    if (role === undefined) return connect.call(this, cb);
    return connect.call(this, (...args: unknown[]) => queryRole.run(role, () => (cb as (...a: unknown[]) => unknown)(...args)));
  };
  proto.query = function (this: pg.Client & { database?: string }, ...args: unknown[]) {
    const role = benchClients.has(this) ? 'bench' : (queryRole.getStore() ?? 'background');
    const database = this.database ?? '';
    bump(statements, database, role);
    if (tracing) {
      const q = args[0] as string | { text?: string; name?: string } | undefined;
      const text = typeof q === 'string' ? q : (q?.text ?? `(prepared ${q?.name ?? '?'})`);
      bump(statementTexts, database, `${role}: ${text.replace(/\s+/g, ' ').trim().slice(0, 160)}`);
    }
    return original.apply(this, args);
  };
}

function statementCounts(database: string): Record<string, number> {
  return Object.fromEntries(statements.get(database) ?? []);
}

function textCounts(database: string): Record<string, number> {
  return Object.fromEntries(statementTexts.get(database) ?? []);
}

let clockTicks: number | undefined;
/** Jiffies per second of /proc/<pid>/stat (USER_HZ; 100 on mainstream Linux builds). */
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

export interface DbActivity {
  /** CPU seconds used by the database's client backends (the benchmark's own excluded); undefined without /proc access to them. */
  backendCpuSec?: number;
  /** Committed transactions (less the benchmark's own single-statement ones). */
  xacts: number;
  /** Rows inserted, updated and deleted (pg_stat_database; rows the benchmark's feeders wrote included). */
  rowsWritten: number;
  inserted: number;
  updated: number;
  deleted: number;
  /** Statements sent by the driver to this database, by role (the benchmark's own under `bench`). */
  statements: Record<string, number>;
  /** With tracing on (countDriverQueries), the statements by `role: text`. */
  texts: Record<string, number>;
}

/**
 * Measures what one database of the PostgreSQL server did between start and stop: the CPU of its
 * client backends (read from /proc: a local server only), its transactions and written rows (the
 * pg_stat_database counters, which backends publish about once a second, so a window of several
 * seconds is accurate to a fraction of a second's work), and the statements the driver sent it.
 * `admin` is a connection to another database of the same server.
 */
export async function dbActivityMeter(admin: Client, database: string): Promise<{ stop(): Promise<DbActivity> }> {
  const read = async () => {
    const [stats] = (
      await admin.query(
        `SELECT xact_commit::float8 AS xacts, tup_inserted::float8 AS ins, tup_updated::float8 AS upd, tup_deleted::float8 AS del FROM pg_stat_database WHERE datname = $1`,
        [database],
      )
    ).rows as Array<{ xacts: number; ins: number; upd: number; del: number }>;
    const pids = (
      await admin.query(`SELECT pid::text AS pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND application_name IS DISTINCT FROM $2`, [database, BENCH_APP])
    ).rows as Array<{ pid: string }>;
    const cpu = new Map<string, number>();
    for (const { pid } of pids) {
      const used = processJiffies(pid, 'postgres');
      if (used !== undefined) cpu.set(pid, used);
    }
    return { stats, cpu, seen: pids.length, counts: statementCounts(database), texts: textCounts(database) };
  };
  const start = await read();
  return {
    async stop() {
      const end = await read();
      const counts: Record<string, number> = {};
      for (const [role, n] of Object.entries(end.counts)) if (n - (start.counts[role] ?? 0)) counts[role] = n - (start.counts[role] ?? 0);
      const texts: Record<string, number> = {};
      for (const [text, n] of Object.entries(end.texts)) if (n - (start.texts[text] ?? 0)) texts[text] = n - (start.texts[text] ?? 0);
      // Backends that started during the window count from zero; one that ended is lost (pools keep theirs).
      let jiffies = 0;
      for (const [pid, used] of end.cpu) jiffies += used - (start.cpu.get(pid) ?? 0);
      const visible = end.seen === 0 || end.cpu.size > 0;
      const d = (k: 'xacts' | 'ins' | 'upd' | 'del') => end.stats[k] - start.stats[k];
      return {
        backendCpuSec: visible ? jiffies / ticksPerSecond() : undefined,
        xacts: Math.max(0, d('xacts') - (counts.bench ?? 0)),
        rowsWritten: d('ins') + d('upd') + d('del'),
        inserted: d('ins'),
        updated: d('upd'),
        deleted: d('del'),
        statements: counts,
        texts,
      };
    },
  };
}

/**
 * A host instance for a benchmark that drives it directly: logs discarded, scheduler off (the
 * benchmark calls the work itself), no OpenAPI document, its own data folder and, when given, an
 * OPENWOP_CONFIG file with `configFile`; `overrides` replace any of these settings.
 */
export async function bootQuietHost(url: string, instance: string, configFile?: Record<string, unknown>, overrides: Record<string, string> = {}): Promise<Host> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-bench-'));
  const env: Record<string, string | undefined> = {
    ...process.env,
    DATABASE_URL: url,
    LOG_LEVEL: 'error',
    OPENWOP_BOOTSTRAP_KEY: 'false',
    OPENWOP_SCHEDULER_ENABLED: 'false',
    OPENWOP_INSTANCE_ID: instance,
    OPENWOP_DATA_DIR: dir,
    ...overrides,
  };
  if (configFile) {
    env.OPENWOP_CONFIG = path.join(dir, 'config.json');
    fs.writeFileSync(env.OPENWOP_CONFIG, JSON.stringify(configFile));
  }
  const host = await createHost(loadHostConfig(env), { logDestination: new Writable({ write: (_c, _e, cb) => cb() }), openApi: false }).catch((e: unknown) => {
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  });
  // The data folder made here goes when the host closes.
  const close = host.close.bind(host);
  return { ...host, close: () => close().finally(() => fs.rmSync(dir, { recursive: true, force: true })) };
}

/** Work a replica does until told to stop, counting what it finished in `counter.n`. */
export type ReplicaWork = (stopped: () => boolean, counter: { n: number }, arg: string) => Promise<void>;

/**
 * The child side of a second instance in its own process (as a replica would be): answers `ready`,
 * then for each `go` runs `work` until `stop`, reporting its count every 50 ms and when done;
 * closes and exits on `exit`, or when the benchmark goes away.
 */
export function serveReplica(work: ReplicaWork, close: () => Promise<void>): void {
  process.on('disconnect', () => process.exit(0));
  let stop = false;
  process.on('message', (msg: { go?: boolean; arg?: string; stop?: boolean; exit?: boolean }) => {
    if (msg.exit) void close().then(() => process.exit(0));
    if (msg.stop) stop = true;
    if (!msg.go) return;
    stop = false;
    const counter = { n: 0 };
    const report = setInterval(() => process.send!({ progress: counter.n }), 50);
    void work(() => stop, counter, msg.arg ?? '').then(() => {
      clearInterval(report);
      process.send!({ progress: counter.n, done: true });
    });
  });
  process.send!({ ready: true });
}

/**
 * The benchmark side: forks `file` with `args` (it calls serveReplica) and resolves once it has
 * booted. `pass(arg)` is a phase driver that runs the replica's work until the phase stops it;
 * `close()` resolves once the replica has closed its connections and exited.
 */
export async function forkReplica(file: string, args: string[]): Promise<{ pass(arg?: string): (stopped: () => boolean, counter: { n: number }) => Promise<void>; close(): Promise<void> }> {
  const proc = fork(file, args, { execArgv: ['-r', '@swc-node/register'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  await new Promise<void>((resolve, reject) => {
    proc.once('message', () => resolve());
    proc.once('exit', (code) => reject(new Error(`bench replica exited with ${code}`)));
  });
  const exited = new Promise<void>((resolve) => (proc.exitCode !== null ? resolve() : proc.once('exit', () => resolve())));
  return {
    close: () => {
      proc.send({ exit: true });
      return exited;
    },
    pass: (arg) => (stopped, counter) =>
      new Promise<void>((resolve) => {
        const poll = setInterval(() => {
          if (stopped()) proc.send({ stop: true });
        }, 20);
        const onMessage = (m: { progress?: number; done?: boolean }) => {
          if (m.progress !== undefined) counter.n = m.progress;
          if (!m.done) return;
          clearInterval(poll);
          proc.off('message', onMessage);
          resolve();
        };
        proc.on('message', onMessage);
        proc.send({ go: true, arg });
      }),
  };
}

/** The entry point of a benchmark file: `child(args)` in a replica process (`--child ...`), else `main()`; a failure exits 1. */
export function runBenchmark(mod: NodeJS.Module, main: () => Promise<void>, child?: (args: string[]) => Promise<void>): void {
  if (require.main !== mod) return;
  const isChild = process.argv[2] === '--child' && child;
  (isChild ? child(process.argv.slice(3)) : main()).catch((e: unknown) => {
    process.stderr.write(`${(e as Error).stack ?? e}\n`);
    process.exit(1);
  });
}
