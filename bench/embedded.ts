/**
 * Embedded engine benchmark: the host as `npm start` runs it with no DATABASE_URL (PGlite inside the
 * process) against the same host on the PostgreSQL server, measured in the same run. Each round boots
 * `openwop-host serve` on each side in a process of its own (the two sides alternate which goes first),
 * on a warm data folder / an already migrated database, and measures:
 *
 * - boot: from spawning the process to its `listening` line (wall seconds, and the CPU seconds the
 *   process used by then), with the host's own phase line (database, migrations, application);
 * - RSS: idle after boot, peak while `clients` clients start `runs` runs of a four-node chain between
 *   them (and the runs execute), and after the load (once every run has completed and the host has
 *   been idle for `settle` seconds);
 * - submission: answered POST /v1/runs per second (every answer must be 201), and end to end (from the
 *   first POST until the last run completed).
 *
 * It prints every round, then min / median / max per side and the embedded/server ratios of each round
 * (same-run ratios: the machine is small and shared, so only ratios measured side by side mean much),
 * with the load average before and after.
 *
 *   npm run bench -- embedded [rounds=3] [runs=512] [clients=16] [settle=10]
 *
 * Uses DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) to create and drop a scratch
 * database for the server side; the embedded side uses a scratch data folder under the system's
 * temporary folder. Both are removed at the end.
 */
import 'reflect-metadata';
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { ArtifactRegistryService } from '../src/platform/artifacts/artifact-registry.service';
import { ApiKeyService } from '../src/platform/identity/api-key.service';
import { createBenchDatabase, runBenchmark } from './harness';

const ROOT = path.join(__dirname, '..');
const TENANT = 'default';
const WORKFLOW = 'vendor.bench.parallel-noops';

/** Two parallel branches between a first and a last node: the burst of the concurrency tests. */
const CHAIN = {
  nodes: [
    { id: 'prep', typeId: 'core.noop', config: { n: 1 } },
    { id: 'left', typeId: 'core.noop', config: { n: 2 } },
    { id: 'right', typeId: 'core.noop', config: { n: 3 } },
    { id: 'join', typeId: 'core.noop', config: { n: 4 } },
  ],
  edges: [
    { from: 'prep', to: 'left' },
    { from: 'prep', to: 'right' },
    { from: 'left', to: 'join' },
    { from: 'right', to: 'join' },
  ],
};

const PACK = {
  name: 'vendor.bench.embedded',
  version: '1.0.0',
  kind: 'workflow-chain',
  engines: { openwop: '^1.0.0' },
  chains: [{ chainId: WORKFLOW, version: '1.0.0', label: WORKFLOW, description: 'four core.noop nodes, two of them in parallel', parameters: { type: 'object' }, dag: CHAIN }],
};

type SideName = 'embedded' | 'server';

interface Side {
  name: SideName;
  env: Record<string, string>;
  /** A connection to the side's database (the embedded socket while its host runs, or the server). */
  client(): Client;
  key?: string;
}

interface Round {
  side: SideName;
  bootWallSec: number;
  bootCpuSec: number;
  /** The host's phase line: milliseconds per boot phase. */
  phases?: Record<string, number>;
  idleRssMb: number;
  peakRssMb: number;
  afterRssMb: number;
  submitted: number;
  submitPerSec: number;
  endToEndPerSec: number;
  /** CPU milliseconds the host process used per run, from the first POST to the last run completed (the embedded side's include its database's; the server side's do not). */
  cpuMsPerRun: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

/** VmRSS of a process in MB (0 when it is gone). */
function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

let clockTicks = 100;
/** CPU seconds (user + system) a process has used. */
function cpuSec(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / clockTicks;
  } catch {
    return 0;
  }
}

function loadAverage(): string {
  return os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

/** `openwop-host serve` on one side, resolved once it logged its `listening` line. */
async function serve(side: Side, port: number): Promise<{ proc: ChildProcess; started: bigint; listenedAt: bigint; bootCpuSec: number; phases?: Record<string, number>; stop(): Promise<void> }> {
  const env: NodeJS.ProcessEnv = { ...process.env, ...side.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', OPENWOP_BOOTSTRAP_KEY: 'false', OPENWOP_RATE_LIMIT_ENABLED: 'false' };
  if (!side.env.DATABASE_URL) delete env.DATABASE_URL;
  // Node flags for the measured hosts alone (a profile: BENCH_SERVE_NODE_FLAGS="--cpu-prof --cpu-prof-dir=...").
  const flags = (process.env.BENCH_SERVE_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const started = process.hrtime.bigint();
  const proc = spawn(process.execPath, [...flags, path.join(ROOT, 'bin', 'openwop-host.js'), 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let partial = '';
  let phases: Record<string, number> | undefined;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const listened = new Promise<bigint>((resolve, reject) => {
    const collect = (d: Buffer) => {
      const parts = (partial + String(d)).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        if (line.includes('"boot phases"')) phases = (JSON.parse(line) as { ms?: Record<string, number> }).ms;
        if (line.includes('openwop host listening')) resolve(process.hrtime.bigint());
      }
    };
    proc.stdout!.on('data', collect);
    proc.stderr!.on('data', collect);
    proc.once('exit', (code) => reject(new Error(`${side.name}: the host exited with ${code} before listening:\n${lines.slice(-20).join('\n')}`)));
  });
  const listenedAt = await listened;
  const bootCpuSec = cpuSec(proc.pid!);
  return {
    proc,
    started,
    listenedAt,
    bootCpuSec,
    phases,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const force = setTimeout(() => proc.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(force);
      }
    },
  };
}

/** The first boot of a side (not measured): creates the database or folder, migrates it, installs the chain and mints a key. */
async function prepare(side: Side): Promise<void> {
  const out = path.join(os.tmpdir(), `openwop-bench-embedded-key-${process.pid}-${side.name}`);
  const env: NodeJS.ProcessEnv = { ...process.env, ...side.env, LOG_LEVEL: 'warn', OPENWOP_BOOTSTRAP_KEY: 'false' };
  if (!side.env.DATABASE_URL) delete env.DATABASE_URL;
  const proc = spawn(process.execPath, ['-r', path.join(ROOT, 'bin', 'ts-register.js'), __filename, '--child', out], { cwd: ROOT, env, stdio: ['ignore', 'inherit', 'inherit'] });
  const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
  if (code !== 0) throw new Error(`${side.name}: preparing the database failed (exit ${code})`);
  side.key = fs.readFileSync(out, 'utf8').trim();
  fs.rmSync(out, { force: true });
}

/** The child of prepare(): boots the host in process, installs the chain, writes a key to `out`. */
async function child(args: string[]): Promise<void> {
  const { createHost } = await import('../src/bootstrap');
  const { loadHostConfig } = await import('../src/platform/config/host-config');
  const host = await createHost(loadHostConfig(process.env), { openApi: false });
  try {
    await host.app.get(ArtifactRegistryService).install('workflow-chain-pack', PACK, { tenant: TENANT, principal: 'bench' }, 'bench');
    const { key } = await host.app.get(ApiKeyService).create({ tenant: TENANT, principal: 'bench', scopes: ['runs:create', 'runs:read'], roles: [] });
    fs.writeFileSync(args[0], key);
  } finally {
    await host.close();
  }
  process.exit(0);
}

/** `clients` clients, each starting its share of `runs` runs one after another; every answer must be 201. */
async function submit(base: string, key: string, runs: number, clients: number): Promise<string[]> {
  const ids: string[] = [];
  const bad = new Map<string, number>();
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < runs) {
        next++;
        const res = await fetch(`${base}/v1/runs`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ workflowId: WORKFLOW }) });
        const body = (await res.json().catch(() => ({}))) as { runId?: string; error?: string };
        if (res.status === 201 && body.runId) ids.push(body.runId);
        else bad.set(`${res.status} ${body.error ?? ''}`, (bad.get(`${res.status} ${body.error ?? ''}`) ?? 0) + 1);
      }
    }),
  );
  if (bad.size) throw new Error(`answers other than 201: ${JSON.stringify(Object.fromEntries(bad))}`);
  return ids;
}

async function waitCompleted(db: Client, ids: string[], timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const rows = (await db.query(`SELECT "status", count(*)::int AS n FROM "run" WHERE "id" = ANY($1::uuid[]) GROUP BY "status"`, [ids])).rows as Array<{ status: string; n: number }>;
    const by = Object.fromEntries(rows.map((r) => [r.status, r.n]));
    if ((by.completed ?? 0) === ids.length) return;
    if ((by.failed ?? 0) + (by.cancelled ?? 0) > 0) throw new Error(`runs ended other than completed: ${JSON.stringify(by)}`);
    if (Date.now() > until) throw new Error(`runs not completed after ${timeoutMs} ms: ${JSON.stringify(by)}`);
    await sleep(250);
  }
}

async function round(side: Side, runs: number, clients: number, settleSec: number): Promise<Round> {
  const port = await freePort();
  const host = await serve(side, port);
  const pid = host.proc.pid!;
  try {
    const bootWallSec = Number(host.listenedAt - host.started) / 1e9;
    // Idle: what the host holds once it has settled after boot.
    await sleep(3000);
    const idleRssMb = rssMb(pid);
    let peakRssMb = idleRssMb;
    const sampler = setInterval(() => (peakRssMb = Math.max(peakRssMb, rssMb(pid))), 100);
    const db = side.client();
    db.on('error', () => undefined);
    await db.connect();
    try {
      const cpu0 = cpuSec(pid);
      const t0 = process.hrtime.bigint();
      const ids = await submit(`http://127.0.0.1:${port}`, side.key!, runs, clients);
      const submitSec = Number(process.hrtime.bigint() - t0) / 1e9;
      await waitCompleted(db, ids, 600_000);
      const endSec = Number(process.hrtime.bigint() - t0) / 1e9;
      const cpuMsPerRun = ((cpuSec(pid) - cpu0) * 1000) / ids.length;
      clearInterval(sampler);
      peakRssMb = Math.max(peakRssMb, rssMb(pid));
      await db.end();
      await sleep(settleSec * 1000);
      return {
        side: side.name,
        bootWallSec,
        bootCpuSec: host.bootCpuSec,
        phases: host.phases,
        idleRssMb,
        peakRssMb,
        afterRssMb: rssMb(pid),
        submitted: ids.length,
        submitPerSec: ids.length / submitSec,
        endToEndPerSec: ids.length / endSec,
        cpuMsPerRun,
      };
    } finally {
      clearInterval(sampler);
      await db.end().catch(() => undefined);
    }
  } finally {
    await host.stop();
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const mmm = (xs: number[], digits: number) => `${Math.min(...xs).toFixed(digits)} / ${median(xs).toFixed(digits)} / ${Math.max(...xs).toFixed(digits)}`;

const METRICS: Array<{ key: keyof Round; label: string; digits: number; better: 'lower' | 'higher' }> = [
  { key: 'bootWallSec', label: 'boot, wall s (spawn to listening)', digits: 2, better: 'lower' },
  { key: 'bootCpuSec', label: 'boot, CPU s of the process', digits: 2, better: 'lower' },
  { key: 'idleRssMb', label: 'RSS idle after boot, MB', digits: 0, better: 'lower' },
  { key: 'peakRssMb', label: 'RSS peak under load, MB', digits: 0, better: 'lower' },
  { key: 'afterRssMb', label: 'RSS after the load, MB', digits: 0, better: 'lower' },
  { key: 'submitPerSec', label: 'submission, POST /v1/runs 201/s', digits: 1, better: 'higher' },
  { key: 'endToEndPerSec', label: 'end to end, runs completed/s', digits: 1, better: 'higher' },
  { key: 'cpuMsPerRun', label: 'host CPU ms per run under load', digits: 2, better: 'lower' },
];

function phaseText(p?: Record<string, number>): string {
  return p ? Object.entries(p).map(([k, v]) => `${k} ${v}`).join(', ') : '(no phase line)';
}

export async function main(rounds = Number(process.argv[2] ?? 3), runs = Number(process.argv[3] ?? 512), clients = Number(process.argv[4] ?? 16), settleSec = Number(process.argv[5] ?? 10)): Promise<void> {
  try {
    clockTicks = Number(require('node:child_process').execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    /* 100 */
  }
  const loadBefore = loadAverage();
  const bench = await createBenchDatabase('bench_embedded');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-bench-embedded-'));
  const serverDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-bench-server-'));
  const sides: Record<SideName, Side> = {
    embedded: { name: 'embedded', env: { OPENWOP_DATA_DIR: dataDir }, client: () => new Client({ host: dataDir, port: 5432, user: 'postgres', database: 'postgres' }) },
    server: { name: 'server', env: { OPENWOP_DATA_DIR: serverDir, DATABASE_URL: bench.url.toString() }, client: () => new Client({ connectionString: bench.url.toString() }) },
  };
  const results: Round[] = [];
  try {
    for (const side of Object.values(sides)) {
      process.stderr.write(`preparing the ${side.name} side (first boot: not measured)\n`);
      await prepare(side);
    }
    for (let r = 0; r < rounds; r++) {
      const order: SideName[] = r % 2 === 0 ? ['embedded', 'server'] : ['server', 'embedded'];
      for (const name of order) {
        process.stderr.write(`round ${r + 1}/${rounds}: ${name} (load average ${loadAverage()})\n`);
        const res = await round(sides[name], runs, clients, settleSec);
        results.push(res);
        process.stderr.write(
          `  boot ${res.bootWallSec.toFixed(2)} s (CPU ${res.bootCpuSec.toFixed(2)} s; ${phaseText(res.phases)}), RSS idle ${res.idleRssMb.toFixed(0)} / peak ${res.peakRssMb.toFixed(0)} / after ${res.afterRssMb.toFixed(0)} MB, ` +
            `${res.submitPerSec.toFixed(1)} submissions/s, ${res.endToEndPerSec.toFixed(1)} runs/s end to end, host CPU ${res.cpuMsPerRun.toFixed(2)} ms per run\n`,
        );
      }
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(serverDir, { recursive: true, force: true });
    await bench.drop();
  }
  const of = (name: SideName) => results.filter((x) => x.side === name);
  const e = of('embedded');
  const s = of('server');
  const out = process.stdout;
  out.write(`\nEmbedded engine vs PostgreSQL server: ${rounds} rounds alternating sides; per round ${clients} clients start ${runs} runs of a four-node chain (two parallel branches).\n`);
  out.write(`Machine: ${os.cpus().length} cores (shared with other work); load average before ${loadBefore}, after ${loadAverage()}.\n`);
  out.write(`Server-side RSS is the host process alone (PostgreSQL runs apart); embedded RSS includes the database engine.\n\n`);
  out.write(`${'min / median / max'.padEnd(36)}${'embedded'.padStart(24)}${'server'.padStart(24)}${'embedded/server per round'.padStart(34)}\n`);
  for (const m of METRICS) {
    const ev = e.map((x) => x[m.key] as number);
    const sv = s.map((x) => x[m.key] as number);
    const ratios = ev.map((v, i) => v / (sv[i] || NaN));
    out.write(`${m.label.padEnd(36)}${mmm(ev, m.digits).padStart(24)}${mmm(sv, m.digits).padStart(24)}${mmm(ratios, 2).padStart(34)}\n`);
  }
  out.write(`\nboot phases (ms), embedded: ${e.map((x) => phaseText(x.phases)).join(' | ')}\n`);
  out.write(`boot phases (ms), server:   ${s.map((x) => phaseText(x.phases)).join(' | ')}\n`);
  const targets = [
    `embedded boot <= 2 s: median ${median(e.map((x) => x.bootWallSec)).toFixed(2)} s`,
    `embedded peak RSS <= 450 MB: max ${Math.max(...e.map((x) => x.peakRssMb)).toFixed(0)} MB`,
    `embedded submission >= 0.6x server: median ratio ${median(e.map((x, i) => x.submitPerSec / s[i].submitPerSec)).toFixed(2)}x`,
  ];
  out.write(`\ntargets: ${targets.join('; ')}\n`);
}

runBenchmark(module, () => main(), child);
