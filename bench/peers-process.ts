/**
 * The peer benchmark's process mode (`npm run bench -- peers-process`): the public API path as users
 * meet it. Each round, each side gets a fresh database (a copy of a template prepared once), a fresh
 * service process and a fresh client process (bench/peers/process-roles.ts). The in-process peer
 * benchmark is bench/peers.ts; this one loads nothing of the host itself:
 *
 * - the host: `openwop-host serve` (bin/openwop-host.js, as `npm start` runs it: the TypeScript compiled
 *   once and cached) with its default logging, `runs.maxActiveRuns` = concurrency; its client speaks
 *   HTTP with keep-alive and an API key;
 * - graphile-worker: its worker (`run()`, concurrency = concurrency, its own logger) in one process,
 *   its client (`makeWorkerUtils().addJob`) in another, told by the handler over a Unix socket.
 *
 * From the service's first moment (no warm-up), it measures submission (`--submissions` items,
 * `--concurrency` in flight: the host's `POST /v1/runs` until its 201, graphile-worker's `addJob`),
 * then, once the side has executed them, idle latency (`--samples` items one at a time, 5-25 ms
 * apart: the host from `POST /v1/runs` to `run.completed` on the run's event stream, graphile-worker
 * from `addJob` to the job's handler running). The sides alternate which goes first from round to
 * round; it prints every round with the load average, and the same-round ratios (min / median / max).
 *
 *   npm run bench -- peers-process [--rounds 3] [--submissions 2000] [--concurrency 16] [--samples 400]
 *                                  [--sides host,graphile-worker] [--base-root <checkout>] [--host-root <checkout>] [--json file] [--short]
 *                                  [--idle-request stream|wait|post|events|read] [--pause 5-25]
 *
 * `--idle-request wait` makes the host's idle item one request (`Prefer: wait`) instead of a POST and its
 * event stream; `post`, `events` and `read` make it one of the default item's requests alone (host sides
 * only: process-roles.ts IDLE_REQUESTS), and `--pause` sets the pause between idle items (`0`: back to back), to see where an
 * item's time goes.
 * `--base-root` adds a side `host@base`: the same host from another checkout (say a worktree of an
 * earlier commit, with node_modules linked), on a template prepared by that checkout, to measure a
 * change before and after in the same rounds (`--host-root` runs the `host` side from another checkout too). BENCH_SERVE_NODE_FLAGS passes Node flags to every
 * host process (`--cpu-prof --cpu-prof-dir=...` for a profile).
 */
import { ChildProcess, fork, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client, Pool } from 'pg';
import { ClientMessage, IDLE_REQUESTS, IdleRequest, percentile, SubmitResult, WHOLE_IDLE_ITEMS } from './peers/process-roles';

const ROOT = path.join(__dirname, '..');
const ROLES = path.join(__dirname, 'peers', 'process-roles.ts');
/** The application_name of the benchmark's own connections: its backends are not counted as the side's. */
const BENCH_APP = 'openwop-bench';
const ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

function option(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : dflt;
}

const SHORT = process.argv.includes('--short');
const ROUNDS = Math.max(1, Number(option('rounds', SHORT ? '1' : '3')));
const SUBMISSIONS = Math.max(1, Number(option('submissions', SHORT ? '200' : '2000')));
const CONCURRENCY = Math.max(1, Number(option('concurrency', '16')));
const SAMPLES = Math.max(1, Number(option('samples', SHORT ? '20' : '400')));
const JSON_OUT = option('json', '');
const BASE_ROOT = option('base-root', '');
/** The checkout whose host the `host` side runs (default: this one). */
const HOST_ROOT = path.resolve(option('host-root', ROOT));
const ONLY_SIDES = option('sides', '').split(',').filter(Boolean);
/** What a host side's idle item does (process-roles.ts IDLE_REQUESTS): the targets are the default's. */
const IDLE_REQUEST = option('idle-request', 'stream') as IdleRequest;
if (!IDLE_REQUESTS.includes(IDLE_REQUEST)) throw new Error(`--idle-request must be one of ${IDLE_REQUESTS.join(', ')}`);
/** The pause between idle items, `lo-hi` ms (`0`: back to back). */
const PAUSE = ((): [number, number] => {
  const text = option('pause', '5-25');
  const m = /^(\d+)(?:-(\d+))?$/.exec(text);
  if (!m || Number(m[2] ?? m[1]) < Number(m[1])) throw new Error(`--pause must be milliseconds, lo-hi (for example 5-25) or one number`);
  return [Number(m[1]), Number(m[2] ?? m[1])];
})();
/** The rate budgets of the other benchmarks (harness BENCH_RATE_BUDGETS): limits on, never reached. */
const RATE_BUDGETS = { OPENWOP_RATE_LIMIT_READ: '999999999/1s', OPENWOP_RATE_LIMIT_WRITE: '999999999/1s', OPENWOP_RATE_LIMIT_PUBLIC: '999999999/1s' };

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const loadavg = () => os.loadavg().map((l) => l.toFixed(2)).join(' ');

type Phase = 'submit' | 'latency';

interface Figures {
  side: string;
  round: number;
  phase: Phase;
  items: number;
  seconds: number;
  rate: number;
  p50Ms: number;
  p99Ms: number;
  /** Idle latency: the first item's (the first run of the fresh process's event stream). */
  firstMs?: number;
  /** CPU per item (ms): the service process, the client process, the side's PostgreSQL backends. */
  serviceCpuMs: number;
  clientCpuMs: number;
  pgCpuMs?: number;
  /** 1-minute load average when the phase began. */
  load: number;
}

/** A side: its template database, and how to start its service on a copy of it. */
interface Side {
  name: string;
  template: string;
  /** The client's role arguments after `client <side>`, and the service, for a round's database. */
  start(db: string, dir: string): Promise<{ client: Child; service: Service }>;
  /** Items still to execute on the side's database (0 once it has done what it accepted). */
  backlog(pool: Pool): Promise<number>;
  /** Items that did not complete (a host run that failed, say). */
  problems(pool: Pool): Promise<string[]>;
}

interface Service {
  pid: number;
  stop(): Promise<void>;
}

interface Child {
  proc: ChildProcess;
  ask<T>(m: ClientMessage): Promise<T>;
  stop(): Promise<void>;
}

let clockTicks = 100;
/** CPU seconds (user + system) a process has used so far (NaN when it is gone, or is not named `name`). */
function cpuSec(pid: number, name?: string): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (name !== undefined && stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== name) return NaN;
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / clockTicks;
  } catch {
    return NaN;
  }
}

/** CPU seconds so far of each client backend of database `db` (the benchmark's own excluded), read from /proc: a local server only. */
async function backendCpu(c: Client, db: string): Promise<Map<string, number>> {
  const { rows } = await c.query(`SELECT pid::text AS pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND application_name IS DISTINCT FROM $2`, [db, BENCH_APP]);
  const out = new Map<string, number>();
  for (const { pid } of rows as Array<{ pid: string }>) {
    const sec = cpuSec(Number(pid), 'postgres');
    if (Number.isFinite(sec)) out.set(pid, sec);
  }
  return out;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

async function admin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: ADMIN_URL, application_name: BENCH_APP });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

function dbUrl(name: string): string {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

const created: string[] = [];
/** A new database, empty or a copy of `template` (retried while the template's last connections close). */
async function createDatabase(prefix: string, template?: string): Promise<string> {
  const name = `${prefix}_${Math.random().toString(16).slice(2, 10)}`;
  for (let attempt = 0; ; attempt++) {
    try {
      await admin((c) => c.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ''}`));
      created.push(name);
      return name;
    } catch (e) {
      if (attempt >= 50 || !/being accessed by other users/.test((e as Error).message)) throw e;
      await sleep(100);
    }
  }
}

async function dropDatabase(name: string): Promise<void> {
  await admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

/** A role of process-roles.ts in a process of its own (compiled by `root`'s require hook). */
function forkRole(root: string, args: string[]): Child {
  const proc = fork(ROLES, args, { cwd: root, execArgv: ['-r', path.join(root, 'bin', 'ts-register.js')], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return {
    proc,
    ask: <T>(m: ClientMessage) =>
      new Promise<T>((resolve, reject) => {
        const onExit = (code: number | null) => reject(new Error(`${args[0]} ${args[1] ?? ''} exited with ${code}`));
        proc.once('exit', onExit);
        proc.once('message', (a: T & { error?: string }) => {
          proc.off('exit', onExit);
          if (a.error) reject(new Error(a.error));
          else resolve(a);
        });
        proc.send(m);
      }),
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.send({ op: 'exit' });
        const force = setTimeout(() => proc.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(force);
      }
    },
  };
}

async function ready(child: Child): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    child.proc.once('message', () => resolve());
    child.proc.once('exit', (code) => reject(new Error(`a benchmark process exited with ${code} before it was ready`)));
  });
}

/** `openwop-host serve` of `root` on `db`, resolved once it logged its `listening` line; its output is read and dropped. */
async function serve(root: string, db: string, port: number, dir: string): Promise<Service> {
  const configFile = path.join(dir, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify({ runs: { maxActiveRuns: CONCURRENCY } }));
  const env: NodeJS.ProcessEnv = { ...process.env, ...RATE_BUDGETS, DATABASE_URL: dbUrl(db), PORT: String(port), HOST: '127.0.0.1', OPENWOP_BOOTSTRAP_KEY: 'false', OPENWOP_DATA_DIR: dir, OPENWOP_CONFIG: configFile };
  const flags = (process.env.BENCH_SERVE_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const proc = spawn(process.execPath, [...flags, path.join(root, 'bin', 'openwop-host.js'), 'serve'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const tail: string[] = [];
  await new Promise<void>((resolve, reject) => {
    let listening = false;
    const collect = (d: Buffer) => {
      if (listening) return;
      for (const line of String(d).split('\n')) {
        tail.push(line);
        if (tail.length > 30) tail.shift();
        if (line.includes('openwop host listening')) {
          listening = true;
          resolve();
        }
      }
    };
    proc.stdout!.on('data', collect);
    proc.stderr!.on('data', collect);
    proc.once('exit', (code) => reject(new Error(`the host exited with ${code} before listening:\n${tail.join('\n')}`)));
    // Below LOG_LEVEL info there is no line: the port accepting a connection says the same (no request is sent).
    const probe = () => {
      if (listening) return;
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        listening = true;
        resolve();
      });
      s.once('error', () => setTimeout(probe, 50));
    };
    probe();
  });
  return {
    pid: proc.pid!,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const force = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(force);
    },
  };
}

function hostSide(name: string, root: string, template: string, key: string): Side {
  return {
    name,
    template,
    async start(db, dir) {
      const port = await freePort();
      const client = forkRole(root, ['client', 'host', `http://127.0.0.1:${port}`, key, String(CONCURRENCY), IDLE_REQUEST]);
      await ready(client);
      return { client, service: await serve(root, db, port, dir) };
    },
    backlog: async (pool) => (await pool.query(`SELECT count(*)::int AS n FROM "run" WHERE "status" IN ('pending', 'running')`)).rows[0].n as number,
    problems: async (pool) =>
      (
        (await pool.query(`SELECT "status", "error"->>'code' AS "code", count(*)::int AS "n" FROM "run" WHERE "status" <> 'completed' GROUP BY 1, 2`)).rows as Array<{ status: string; code: string | null; n: number }>
      ).map((r) => `${r.n} run(s) ${r.status}${r.code ? ` (${r.code})` : ''}`),
  };
}

function graphileSide(template: string): Side {
  return {
    name: 'graphile-worker',
    template,
    async start(db, dir) {
      const socket = path.join(dir, 'done.sock');
      const client = forkRole(ROOT, ['client', 'graphile-worker', dbUrl(db), socket, String(CONCURRENCY)]);
      await ready(client);
      const worker = forkRole(ROOT, ['worker', dbUrl(db), socket, String(CONCURRENCY)]);
      await ready(worker);
      return { client, service: { pid: worker.proc.pid!, stop: () => worker.stop() } };
    },
    backlog: async (pool) => (await pool.query('SELECT count(*)::int AS n FROM graphile_worker._private_jobs')).rows[0].n as number,
    problems: async () => [],
  };
}

/** The host's template: migrated, the chain installed, a key minted (by a host of `root`, in a process of its own). */
async function hostTemplate(root: string): Promise<{ template: string; key: string }> {
  const template = await createDatabase('peers_proc_tpl_host');
  const out = path.join(os.tmpdir(), `openwop-bench-peers-key-${process.pid}-${created.length}`);
  const child = forkRole(root, ['prepare', root, dbUrl(template), out]);
  const code = await new Promise<number | null>((resolve) => child.proc.once('exit', resolve));
  if (code !== 0) throw new Error(`preparing the host's database (${root}) failed: exit ${code}`);
  const key = fs.readFileSync(out, 'utf8').trim();
  fs.rmSync(out, { force: true });
  return { template, key };
}

async function graphileTemplate(): Promise<string> {
  const { runMigrations, Logger } = await import('graphile-worker');
  const template = await createDatabase('peers_proc_tpl_gw');
  await runMigrations({ connectionString: dbUrl(template), logger: new Logger(() => () => undefined) });
  return template;
}

/** One side's round: a fresh database, client and service; submission, then idle latency. */
async function round(side: Side, n: number, problems: string[]): Promise<Figures[]> {
  const db = await createDatabase(`peers_proc_${side.name.replace(/\W/g, '_')}`, side.template);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-bench-peers-'));
  const pool = new Pool({ connectionString: dbUrl(db), max: 1, application_name: BENCH_APP });
  pool.on('error', () => undefined);
  const out: Figures[] = [];
  let started: { client: Child; service: Service } | undefined;
  try {
    started = await side.start(db, dir);
    const { client, service } = started;
    const phase = async (name: Phase, run: () => Promise<{ items: number; seconds: number; p50Ms: number; p99Ms: number; firstMs?: number }>) => {
      const load = os.loadavg()[0];
      const cpu0 = [cpuSec(service.pid), cpuSec(client.proc.pid!)];
      const { r, pgSec } = await admin(async (c) => {
        const before = await backendCpu(c, db);
        const r = await run();
        const after = await backendCpu(c, db);
        // Backends started in the phase count from zero; none visible: a server elsewhere, not measured.
        return { r, pgSec: after.size ? [...after].reduce((sum, [pid, sec]) => sum + sec - (before.get(pid) ?? 0), 0) : undefined };
      });
      const per = (sec: number) => (sec * 1000) / r.items;
      out.push({
        side: side.name,
        round: n,
        phase: name,
        ...r,
        rate: r.items / r.seconds,
        serviceCpuMs: per(cpuSec(service.pid) - cpu0[0]),
        clientCpuMs: per(cpuSec(client.proc.pid!) - cpu0[1]),
        pgCpuMs: pgSec === undefined ? undefined : per(pgSec),
        load,
      });
    };
    await phase('submit', async () => {
      const { submit } = await client.ask<{ submit: SubmitResult }>({ op: 'submit', count: SUBMISSIONS });
      return { items: submit.ok, seconds: submit.seconds, p50Ms: submit.p50Ms, p99Ms: submit.p99Ms };
    });
    // Idle means idle: what was accepted has been executed before the first item.
    const until = Date.now() + 120_000;
    while ((await side.backlog(pool)) > 0) {
      if (Date.now() > until) throw new Error(`${side.name}: the submitted items were not executed within 120 s`);
      await sleep(50);
    }
    await phase('latency', async () => {
      const t = process.hrtime.bigint();
      const { samples } = await client.ask<{ samples: number[] }>({ op: 'latency', count: SAMPLES, pause: PAUSE });
      const firstMs = samples[0];
      samples.sort((x, y) => x - y);
      return { items: samples.length, seconds: Number(process.hrtime.bigint() - t) / 1e9, p50Ms: percentile(samples, 50), p99Ms: percentile(samples, 99), firstMs };
    });
    for (const p of await side.problems(pool)) problems.push(`round ${n}, ${side.name}: ${p}`);
  } finally {
    await started?.client.stop();
    await started?.service.stop();
    await pool.end().catch(() => undefined);
    await dropDatabase(db);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

function spread(values: number[]): { min: number; median: number; max: number } {
  const s = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (!s.length) return { min: NaN, median: NaN, max: NaN };
  const mid = Math.floor(s.length / 2);
  return { min: s[0], median: s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2, max: s[s.length - 1] };
}

const f = (v: number | undefined, digits = 2) => (v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(digits));

function row(r: Figures): string {
  const label = r.phase === 'submit' ? `submission, ${CONCURRENCY} in flight` : 'idle latency, 1 step';
  return `  ${label.padEnd(26)}${r.side.padEnd(18)}${String(r.items).padStart(6)}${f(r.rate, 1).padStart(9)}${f(r.p50Ms).padStart(9)}${f(r.p99Ms).padStart(9)}${f(r.firstMs, 1).padStart(9)}${f(r.serviceCpuMs, 3).padStart(10)}${f(r.clientCpuMs, 3).padStart(10)}${f(r.pgCpuMs, 3).padStart(9)}${f(r.load).padStart(7)}`;
}

const HEADER = `  ${'phase'.padEnd(26)}${'side'.padEnd(18)}${'items'.padStart(6)}${'per s'.padStart(9)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'first ms'.padStart(9)}${'service'.padStart(10)}${'client'.padStart(10)}${'pg'.padStart(9)}${'load'.padStart(7)}`;

interface Ratio {
  figure: string;
  values: number[];
  min: number;
  median: number;
  max: number;
  target?: string;
  met?: boolean;
}

function ratios(all: Figures[], subject: string, peer: string, withTargets: boolean): Ratio[] {
  const rounds = [...new Set(all.map((r) => r.round))];
  const get = (side: string, phase: Phase, n: number) => all.find((r) => r.side === side && r.phase === phase && r.round === n);
  const line = (figure: string, phase: Phase, pick: (r: Figures) => number, target?: { op: '>=' | '<='; value: number }): Ratio | undefined => {
    const values = rounds.map((n) => {
      const a = get(subject, phase, n);
      const b = get(peer, phase, n);
      return a && b && pick(b) > 0 ? pick(a) / pick(b) : NaN;
    });
    if (!values.some(Number.isFinite)) return undefined;
    const s = spread(values);
    const t = withTargets && target ? { target: `${target.op === '>=' ? '≥' : '≤'} ${target.value}`, met: target.op === '>=' ? s.median >= target.value : s.median <= target.value } : {};
    return { figure, values, ...s, ...t };
  };
  return [
    line(`submission, per s: ${subject} / ${peer}`, 'submit', (r) => r.rate, { op: '>=', value: 1 }),
    line(`idle latency 1 step, p50: ${subject} / ${peer}`, 'latency', (r) => r.p50Ms, { op: '<=', value: 1.5 }),
    line(`idle latency 1 step, p99: ${subject} / ${peer}`, 'latency', (r) => r.p99Ms, { op: '<=', value: 2 }),
    line(`service CPU per submission: ${subject} / ${peer}`, 'submit', (r) => r.serviceCpuMs),
    line(`service CPU per idle item: ${subject} / ${peer}`, 'latency', (r) => r.serviceCpuMs),
  ].filter((l): l is Ratio => l !== undefined);
}

export async function main(): Promise<void> {
  try {
    clockTicks = Number(require('node:child_process').execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    /* 100 */
  }
  const version = await admin(async (c) => (await c.query('SELECT version() AS v')).rows[0].v as string);
  if (/emscripten|pglite/i.test(version)) throw new Error('the peer benchmark needs a PostgreSQL server (DATABASE_URL): the embedded engine runs inside one process, with no databases of their own or backends to measure');
  const gwVersion = (JSON.parse(fs.readFileSync(require.resolve('graphile-worker/package.json'), 'utf8')) as { version: string }).version;
  const loadBefore = loadavg();
  const all: Figures[] = [];
  const problems: string[] = [];
  try {
    const wanted = (name: string) => !ONLY_SIDES.length || ONLY_SIDES.includes(name);
    const sides: Side[] = [];
    if (wanted('host')) {
      const t = await hostTemplate(HOST_ROOT);
      sides.push(hostSide('host', HOST_ROOT, t.template, t.key));
    }
    if (wanted('graphile-worker')) {
      // Its item is the job run, told over a socket: only the host's default item is its like.
      if (!WHOLE_IDLE_ITEMS.includes(IDLE_REQUEST)) throw new Error(`--idle-request ${IDLE_REQUEST} measures one of the host's requests: name the host sides only (--sides host)`);
      sides.push(graphileSide(await graphileTemplate()));
    }
    if (BASE_ROOT) {
      const t = await hostTemplate(path.resolve(BASE_ROOT));
      sides.push(hostSide('host@base', path.resolve(BASE_ROOT), t.template, t.key));
    }
    if (!sides.length) throw new Error(`nothing to measure: --sides names none of host, graphile-worker`);
    for (let n = 1; n <= ROUNDS; n++) {
      // Alternate which side goes first, so a slow spell of the shared machine is shared.
      const order = n % 2 ? sides : [...sides].reverse();
      for (const side of order) {
        const t = Date.now();
        const figures = await round(side, n, problems);
        all.push(...figures);
        process.stderr.write(`round ${n}: ${side.name} (${((Date.now() - t) / 1000).toFixed(1)} s, load average ${loadavg()})\n${figures.map(row).join('\n')}\n`);
      }
    }
  } finally {
    for (const db of created) await dropDatabase(db).catch(() => undefined);
  }
  const sides = [...new Set(all.map((r) => r.side))];
  const summary = [
    ...(sides.includes('host') && sides.includes('graphile-worker') ? ratios(all, 'host', 'graphile-worker', true) : []),
    ...(sides.includes('host@base') && sides.includes('graphile-worker') ? ratios(all, 'host@base', 'graphile-worker', true) : []),
    ...(sides.includes('host@base') && sides.includes('host') ? ratios(all, 'host', 'host@base', false) : []),
  ];
  const out = process.stdout;
  out.write(`\nPeer benchmark, process mode: the host (openwop-host serve) beside graphile-worker ${gwVersion}, each side a fresh service process, a fresh client process and a fresh database per round\n`);
  out.write(`${version.split(',')[0]}, ${os.cpus().length} cores shared with other work; load average (1, 5, 15 min) ${loadBefore} before, ${loadavg()} after\n`);
  out.write(`${ROUNDS} round(s), sides alternating; ${SUBMISSIONS} submissions with ${CONCURRENCY} in flight, then ${SAMPLES} idle items one at a time, ${PAUSE[1] > 0 ? `${PAUSE[0]}-${PAUSE[1]} ms apart` : 'back to back'}${IDLE_REQUEST !== 'stream' ? ` (the host's item: ${IDLE_REQUEST}, not the create followed to run.completed)` : ''}${SHORT ? ' (short mode: a smoke test, the figures mean nothing)' : ''}\n`);
  out.write('first ms = the latency of the first idle item; per item: service = CPU ms of the host / worker process, client = of the client process, pg = of the side\'s PostgreSQL backends; load = 1-minute load average at the start of the phase\n');
  for (let n = 1; n <= ROUNDS; n++) out.write(`\nround ${n}\n${HEADER}\n${all.filter((r) => r.round === n).map(row).join('\n')}\n`);
  out.write(`\nsame-round ratios (min / median / max over ${ROUNDS} round(s))\n`);
  for (const l of summary) out.write(`  ${l.figure.padEnd(58)}${f(l.min).padStart(7)}${f(l.median).padStart(8)}${f(l.max).padStart(8)}${l.target ? `   target ${l.target}: ${l.met ? 'met' : 'NOT met'}` : ''}\n`);
  if (problems.length) {
    out.write(`\nitems that did not complete\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
    process.exitCode = 1;
  }
  if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify({ mode: 'process', versions: [`graphile-worker ${gwVersion}`], server: version, loadAverage: { before: loadBefore, after: loadavg() }, rounds: ROUNDS, submissions: SUBMISSIONS, concurrency: CONCURRENCY, samples: SAMPLES, short: SHORT, figures: all, summary, problems }, null, 2));
}

if (require.main === module) {
  main().catch((e: unknown) => {
    process.stderr.write(`${(e as Error).stack ?? e}\n`);
    process.exit(1);
  });
}
