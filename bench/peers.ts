/**
 * Peer benchmark: the host beside the PostgreSQL job queues a user would otherwise pick,
 * graphile-worker and pg-boss, on the same PostgreSQL server (each on a fresh database of its own),
 * on the same shapes of work, in alternating rounds. Prints every round's figures and the same-round
 * ratios host / peer (min / median / max over the rounds). A measurement, not a test.
 *
 *   npm run bench -- peers [--rounds 3] [--seconds 5] [--concurrency 16] [--backlog 500] [--short] [--json file]
 *                          [--shapes backlog-1,backlog-3,submit,latency-1,latency-3] [--sides host,graphile-worker,...] [--trace]
 *   (the public API path with the host as its own process: `npm run bench -- peers-process`, bench/peers-process.ts)
 *
 * Shapes (each phase: a warm-up, not counted, then a fixed counted window):
 * - backlog, 1 step: 1-node `core.noop` runs against no-op jobs, `concurrency` in flight on every
 *   side (the host's `runs.maxActiveRuns`, graphile-worker's `concurrency`, pg-boss fetch loops);
 *   graphile-worker also in its batched mode (local queue of 500, batched completion) as a second
 *   baseline. A feeder keeps about `backlog` items pending, as submitting clients would.
 * - backlog, 3 steps: 3-node runs against 3-step chains in which each job enqueues the next (the
 *   peers' rate is their steps done / 3: a FIFO backlog finishes its chains in waves, its steps evenly).
 * - submission: `concurrency` clients submitting one item at a time (the host: HTTP POST /v1/runs;
 *   graphile-worker: `addJob`; pg-boss: `send`), every side executing what it accepts meanwhile.
 * - idle latency, 1 and 3 steps: one item at a time, submit → completion observed (the host: the
 *   `run.completed` event over SSE; the peers: their last step's handler running).
 * Per phase: items/s, PostgreSQL CPU per item (the side's database backends, from /proc), rows
 * written and transactions per item (pg_stat_database of its database), and statements per item
 * (round trips, counted in the `pg` driver every side uses; for submissions also those sent while
 * handling the submission itself: only that phase labels statements by role, since the labels turn
 * on Node's async-context tracking for the whole process, a cost the host does not pay as deployed).
 *
 * Uses DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) to create and drop the
 * databases. `--short` is a smoke test (one round of sub-second windows): its figures mean nothing.
 */
import 'reflect-metadata';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as fs from 'node:fs';
import { Logger, makeWorkerUtils, run as runGraphile, runMigrations, Runner, TaskList, WorkerUtils } from 'graphile-worker';
import PgBoss from 'pg-boss';
import { Client, Pool } from 'pg';
import type { Host } from '../src/bootstrap';
import { RunEngineService } from '../src/capabilities/runs/engine/run-engine.service';
import { parseDefinition, WorkflowDefinition } from '../src/capabilities/runs/workflow-definition';
import { ArtifactRegistryService } from '../src/platform/artifacts/artifact-registry.service';
import { Waiters } from './peers/waiters';
import { ApiKeyService } from '../src/platform/identity/api-key.service';
import {
  BENCH_RATE_BUDGETS,
  benchPool,
  bootQuietHost,
  countDriverQueries,
  toleratePoolTeardown,
  cpuMeter,
  CpuReading,
  createBenchDatabase,
  dbActivityMeter,
  insertPendingRuns,
  labelRoles,
  measure,
  runBenchmark,
  withRole,
} from './harness';

function option(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : dflt;
}

const SHORT = process.argv.includes('--short');
const ROUNDS = Math.max(1, Number(option('rounds', SHORT ? '1' : '3')));
const WINDOW_S = Number(option('seconds', SHORT ? '0.5' : '5'));
const WARM_S = SHORT ? 0.2 : Math.max(2, WINDOW_S / 4);
const CONCURRENCY = Math.max(1, Number(option('concurrency', '16')));
const BACKLOG = Math.max(4 * CONCURRENCY, Number(option('backlog', SHORT ? '0' : '500')));
/** A latency window also runs until it has this many samples (pg-boss polls every 0.5 s). */
const MIN_SAMPLES = SHORT ? 1 : 10;
const JSON_OUT = option('json', '');
/** Print the statements each phase sent, by role and text, per item (to see where a run's round trips go). */
const TRACE = process.argv.includes('--trace'); // folding every statement's text costs every side a little: for reading, not for measuring
const ONLY_SHAPES = option('shapes', '').split(',').filter(Boolean);
const ONLY_SIDES = option('sides', '').split(',').filter(Boolean);
/** graphile-worker's batched mode, as its performance page configures it. */
const GRAPHILE_BATCHED = { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 };
/** pg-boss's shortest polling interval: a worker that finds nothing waits this long. */
const PGBOSS_POLL_MS = 500;
const TENANT = 'tenant-0'; // the tenant insertPendingRuns writes with one tenant
const ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Waits for a teardown step at most `ms`, ignoring its failure (the database is dropped after it anyway). */
async function bounded(step: unknown, ms = 15_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.resolve(step).catch(() => undefined), new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}
const now = () => Number(process.hrtime.bigint()) / 1e6;

type ShapeKey = 'backlog-1' | 'backlog-3' | 'submit' | 'latency-1' | 'latency-3';
const SHAPES: Array<{ key: ShapeKey; label: string; steps: number }> = [
  { key: 'backlog-1', label: 'backlog, 1 step', steps: 1 },
  { key: 'backlog-3', label: 'backlog, 3 steps', steps: 3 },
  { key: 'submit', label: `submission, ${CONCURRENCY} clients`, steps: 1 },
  { key: 'latency-1', label: 'idle latency, 1 step', steps: 1 },
  { key: 'latency-3', label: 'idle latency, 3 steps', steps: 3 },
];

/** One phase's figures; the per-item ones divide by `items`. */
interface Figures {
  shape: ShapeKey;
  side: string;
  round: number;
  items: number;
  seconds: number;
  rate: number;
  p50Ms?: number;
  p99Ms?: number;
  pgCpuMs?: number;
  /** CPU of this process (the side itself, its clients and the benchmark's feeder). */
  nodeCpuMs?: number;
  rows: number;
  xacts: number;
  statements: number;
  /** Statements sent while handling the submission itself (its request, its enqueue call). */
  submitStatements?: number;
  cpu?: CpuReading;
  /** With --trace: statements per item by `role: text`. */
  texts?: Record<string, number>;
  /** Items of the phase that did not complete (host runs that failed, for instance). */
  problems?: string[];
}

/** A side's workers (and feeder) while a phase runs. */
interface Running {
  /** Items finished so far. */
  completed(): Promise<number>;
  /** Stops the workers and feeder and clears what is left, ready for the next phase. */
  stop(): Promise<void>;
}

interface SubmitLoad {
  ok: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
}

interface Side {
  readonly name: string;
  readonly dbName: string;
  /** Which shapes this side takes part in. */
  readonly shapes: ShapeKey[];
  setup(): Promise<void>;
  close(): Promise<void>;
  backlog(steps: number): Promise<Running>;
  submission(): Promise<Running & { load(seconds: number): Promise<SubmitLoad> }>;
  latency(steps: number): Promise<Running & { once(): Promise<void> }>;
  /** What went wrong with the items of the last phase (returned once). */
  problems(): string[];
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** `n` loops until `deadline` (ms, the clock of now()), each running `one` and timing it. */
async function clientLoops(n: number, deadline: number, one: () => Promise<void>): Promise<SubmitLoad> {
  const started = now();
  const times: number[] = [];
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (now() < deadline) {
        const t = now();
        await one();
        times.push(now() - t);
      }
    }),
  );
  times.sort((a, b) => a - b);
  return { ok: times.length, seconds: (now() - started) / 1000, p50Ms: percentile(times, 50), p99Ms: percentile(times, 99) };
}

/** Keeps about BACKLOG items pending: tops up by half whenever fewer than half are left. */
function feeder(pending: () => Promise<number>, add: (n: number) => Promise<void>): { stop(): Promise<void> } {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      if ((await pending()) < BACKLOG / 2) await add(Math.ceil(BACKLOG / 2));
      await sleep(50);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

// --- the host ---------------------------------------------------------------------------------

function noopDag(n: number): Record<string, unknown> {
  const nodes = Array.from({ length: n }, (_, i) => ({ id: `n${i + 1}`, typeId: 'core.noop', config: { step: i + 1 } }));
  return { nodes, edges: nodes.slice(1).map((x, i) => ({ from: nodes[i].id, to: x.id })) };
}

let executionsLabelled = false;
/** Statements of run executions count as `execute`, not as the request that started them (POST /v1/runs claims its run at once). */
function labelExecutions(): void {
  if (executionsLabelled) return;
  const proto = RunEngineService.prototype as unknown as { start?: (...args: unknown[]) => void };
  const start = proto.start;
  if (typeof start !== 'function') throw new Error('RunEngineService.start(row) is gone: the benchmark can no longer tell execution statements from submission ones');
  proto.start = function (this: unknown, ...args: unknown[]) {
    // A run started before its insert (the third argument) sends the submission's insert as its first
    // write: it stays the submission's (the benchmark's chains complete at once, so it writes nothing more).
    return args[2] ? start.apply(this, args) : withRole('execute', () => start.apply(this, args));
  };
  executionsLabelled = true;
}

/**
 * Statements sent while handling POST /v1/runs count as `submit`, those of event streams as
 * `observe`. Returns the number of requests the server is handling.
 */
function labelRequests(server: http.Server): () => number {
  const listeners = server.listeners('request') as Array<(req: http.IncomingMessage, res: http.ServerResponse) => void>;
  if (!listeners.length) throw new Error('the host server has no request listener to label');
  server.removeAllListeners('request');
  const roleOf = (req: http.IncomingMessage) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'POST' && path === '/v1/runs') return 'submit';
    if (req.method === 'GET' && /^\/v1\/runs\/[^/]+\/events$/.test(path)) return 'observe';
    return 'http';
  };
  let inFlight = 0;
  for (const l of listeners)
    server.on('request', (req, res) => {
      inFlight++;
      res.once('close', () => inFlight--);
      withRole(roleOf(req), () => l.call(server, req, res));
    });
  return () => inFlight;
}

class HostSide implements Side {
  readonly name = 'host';
  readonly shapes: ShapeKey[] = ['backlog-1', 'backlog-3', 'submit', 'latency-1', 'latency-3'];
  dbName = '';
  private drop?: () => Promise<void>;
  private host?: Host;
  private monitor!: Pool;
  private base = '';
  private auth = '';
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  private readonly definitions = new Map<number, WorkflowDefinition>();
  private inFlight: () => number = () => 0;

  async setup(): Promise<void> {
    const db = await createBenchDatabase('peers_host');
    this.dbName = db.name;
    this.drop = db.drop;
    labelExecutions();
    // As deployed: the engine claims on its own (periodic claim, and at once for runs created here).
    this.host = await bootQuietHost(db.url.toString(), 'peers-host', { runs: { maxActiveRuns: CONCURRENCY } }, { OPENWOP_SCHEDULER_ENABLED: 'true', ...BENCH_RATE_BUDGETS });
    this.inFlight = labelRequests(this.host.app.getHttpServer() as http.Server);
    await this.host.app.listen({ port: 0, host: '127.0.0.1' });
    this.base = `http://127.0.0.1:${(this.host.app.getHttpServer().address() as AddressInfo).port}`;
    const chains = [1, 3].map((n) => ({ chainId: `bench.steps${n}`, version: '1.0.0', label: `${n} no-op steps`, description: `${n} core.noop nodes in a chain`, parameters: { type: 'object' }, dag: noopDag(n) }));
    await this.host.app.get(ArtifactRegistryService).install('workflow-chain-pack', { name: 'private.bench.peers', version: '1.0.0', kind: 'workflow-chain', engines: { openwop: '^1.0.0' }, chains }, { tenant: TENANT, principal: 'bench' }, 'bench');
    for (const n of [1, 3]) {
      const parsed = parseDefinition(`bench.steps${n}`, noopDag(n));
      if (!parsed.definition) throw new Error(`bench chain invalid: ${JSON.stringify(parsed.problems)}`);
      this.definitions.set(n, parsed.definition);
    }
    const { key } = await this.host.app.get(ApiKeyService).create({ tenant: TENANT, principal: 'bench', scopes: ['runs:create', 'runs:read'] });
    this.auth = `Bearer ${key}`;
    this.monitor = benchPool(db.url.toString());
  }

  async close(): Promise<void> {
    try {
      this.agent.destroy();
      await this.monitor?.end().catch(() => undefined);
      await bounded(this.host?.close());
    } finally {
      await this.drop?.();
    }
  }

  private get engine(): RunEngineService {
    return this.host!.app.get(RunEngineService);
  }

  private async clear(): Promise<void> {
    await this.monitor.query('TRUNCATE "run", "run_node", "event", "event_stream"');
  }

  private async count(where: string): Promise<number> {
    return (await this.monitor.query(`SELECT count(*)::int AS n FROM "run" WHERE ${where}`)).rows[0].n;
  }

  /** Removes the runs nobody claimed yet, waits for those in flight, and checks that none failed. */
  private async drain(): Promise<void> {
    const until = Date.now() + 60_000;
    // Requests the load generator left in flight still create runs.
    while (this.inFlight() > 0) {
      if (Date.now() > until) throw new Error('host: requests still in flight 60 s after the phase');
      await sleep(20);
    }
    await this.monitor.query(`DELETE FROM "run" WHERE "status" = 'pending' AND "lease_owner" IS NULL`);
    while (this.engine.activeCount() > 0 || (await this.count(`"kind" = 'workflow' AND "status" IN ('pending', 'running')`)) > 0) {
      if (Date.now() > until) throw new Error('host: runs still in flight 60 s after the phase');
      await sleep(20);
    }
    // A run that did not complete is a finding, not a reason to lose the measurement: reported with the figures.
    const bad = (
      await this.monitor.query(
        `SELECT "status", "error"->>'code' AS "code", "error"->>'message' AS "message", count(*)::int AS "n" FROM "run" WHERE "status" <> 'completed' GROUP BY 1, 2, 3`,
      )
    ).rows as Array<{ status: string; code: string | null; message: string | null; n: number }>;
    for (const b of bad) this.issues.push(`${b.n} run(s) ${b.status}${b.code ? `: ${b.code} (${b.message})` : ''}`);
  }

  private issues: string[] = [];

  problems(): string[] {
    const out = this.issues;
    this.issues = [];
    return out;
  }

  async backlog(steps: number): Promise<Running> {
    await this.clear();
    const definition = this.definitions.get(steps)!;
    const add = (n: number) => insertPendingRuns(this.monitor, n, { definition, scopes: ['runs:create', 'runs:read'] });
    await add(BACKLOG);
    // Through the in-progress index (run_active_idx, workflow runs only): the feeder asks every 50 ms,
    // and a scan of every run finished so far would load the machine the host is measured on.
    const feed = feeder(() => this.count(`"kind" = 'workflow' AND "status" = 'pending' AND "lease_owner" IS NULL`), add);
    return {
      completed: () => this.count(`"status" = 'completed'`),
      stop: async () => {
        await feed.stop();
        await this.drain();
      },
    };
  }

  async submission(): Promise<Running & { load(seconds: number): Promise<SubmitLoad> }> {
    await this.clear();
    return {
      completed: () => this.count(`"status" = 'completed'`),
      stop: () => this.drain(),
      load: async (seconds) => {
        const m = await measure('POST /v1/runs', `${this.base}/v1/runs`, {
          connections: CONCURRENCY,
          durationSec: seconds,
          method: 'POST',
          body: JSON.stringify({ workflowId: 'bench.steps1' }),
          headers: { authorization: this.auth, 'content-type': 'application/json' },
        });
        if (m.non2xx || m.errors) throw new Error(`host: POST /v1/runs answered ${m.non2xx} non-2xx responses and ${m.errors} errors`);
        return { ok: m.ok, seconds: m.seconds, p50Ms: m.p50Ms, p99Ms: m.p99Ms };
      },
    };
  }

  async latency(steps: number): Promise<Running & { once(): Promise<void> }> {
    await this.clear();
    return {
      completed: () => this.count(`"status" = 'completed'`),
      stop: () => this.drain(),
      once: async () => {
        const created = await this.request('POST', '/v1/runs', JSON.stringify({ workflowId: `bench.steps${steps}` }));
        if (created.status !== 201) throw new Error(`host: POST /v1/runs answered ${created.status}: ${created.body}`);
        await this.followUntilCompleted((JSON.parse(created.body) as { runId: string }).runId);
      },
    };
  }

  private request(method: string, path: string, body?: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = http.request(`${this.base}${path}`, { method, agent: this.agent, headers: { authorization: this.auth, ...(body ? { 'content-type': 'application/json' } : {}) } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  /** Reads the run's SSE stream until its terminal event; anything but run.completed is a failure. */
  private followUntilCompleted(runId: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const req = http.request(`${this.base}/v1/runs/${runId}/events`, { agent: this.agent, headers: { authorization: this.auth, accept: 'text/event-stream' } }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`host: the event stream answered ${res.statusCode}`));
        let text = '';
        let settled = false;
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
          const terminal = /^event: (run\.completed|run\.failed|run\.cancelled)$/m.exec(text);
          if (terminal && !settled) {
            settled = true;
            if (terminal[1] === 'run.completed') resolve();
            else reject(new Error(`host: run ${runId} ended with ${terminal[1]}`));
          }
        });
        res.on('end', () => {
          if (!settled) reject(new Error(`host: the event stream of ${runId} ended without a terminal event`));
        });
        res.on('error', reject);
      });
      req.setTimeout(30_000, () => req.destroy(new Error(`host: run ${runId} did not complete within 30 s`)));
      req.on('error', reject);
      req.end();
    });
  }
}

// --- graphile-worker ---------------------------------------------------------------------------

const quietGraphileLogger = new Logger(() => () => undefined);

class GraphileSide implements Side {
  readonly shapes: ShapeKey[];
  dbName = '';
  private url = '';
  private drop?: () => Promise<void>;
  private monitor!: Pool;
  /** Enqueues the feeder's jobs through the benchmark's own connections. */
  private feedUtils!: WorkerUtils;
  /** The submitting client's connections. */
  private utils!: WorkerUtils;

  constructor(
    readonly name: string,
    private readonly batched: boolean,
  ) {
    // The batched mode is a throughput setting: its local queue holds jobs back from idle workers.
    this.shapes = batched ? ['backlog-1', 'backlog-3'] : ['backlog-1', 'backlog-3', 'submit', 'latency-1', 'latency-3'];
  }

  async setup(): Promise<void> {
    const db = await createBenchDatabase(this.batched ? 'peers_gwb' : 'peers_gw');
    this.dbName = db.name;
    this.drop = db.drop;
    this.url = db.url.toString();
    await runMigrations({ connectionString: this.url, logger: quietGraphileLogger });
    this.monitor = benchPool(this.url);
    this.feedUtils = await makeWorkerUtils({ pgPool: this.monitor, logger: quietGraphileLogger });
    this.utils = await makeWorkerUtils({ connectionString: this.url, logger: quietGraphileLogger });
  }

  async close(): Promise<void> {
    try {
      await bounded(this.utils?.release());
      await bounded(this.feedUtils?.release());
      await this.monitor?.end().catch(() => undefined);
    } finally {
      await this.drop?.();
    }
  }

  problems(): string[] {
    return []; // a task that threw would be retried, and these do not throw
  }

  /** A worker pool of `concurrency` (its pool sized as graphile-worker recommends: concurrency + 2). */
  private start(taskList: TaskList): Promise<Runner> {
    return runGraphile({
      connectionString: this.url,
      concurrency: CONCURRENCY,
      maxPoolSize: CONCURRENCY + 2,
      noHandleSignals: true,
      logger: quietGraphileLogger,
      taskList,
      ...(this.batched ? { preset: { worker: GRAPHILE_BATCHED } } : {}),
    });
  }

  private async clear(): Promise<void> {
    await this.monitor.query('TRUNCATE graphile_worker._private_jobs, graphile_worker._private_job_queues');
  }

  /** `step` jobs of a chain of `steps`: each enqueues the next; `last(payload)` runs after the last one, `each()` after every one. */
  private tasks(steps: number, last: (payload: { id?: string }) => void, each: () => void = () => undefined): TaskList {
    if (steps === 1)
      return {
        noop: async (payload) => {
          each();
          last(payload as { id?: string });
        },
      };
    return {
      step: async (payload, helpers) => {
        const p = payload as { i: number; id?: string };
        if (p.i < steps) await helpers.addJob('step', { ...p, i: p.i + 1 });
        else last(p);
        each();
      },
    };
  }

  private first(steps: number, id?: string): { identifier: string; payload: Record<string, unknown> } {
    return steps === 1 ? { identifier: 'noop', payload: id ? { id } : {} } : { identifier: 'step', payload: id ? { i: 1, id } : { i: 1 } };
  }

  private async stopRunner(runner: Runner): Promise<void> {
    await runner.stop();
    await this.clear();
  }

  async backlog(steps: number): Promise<Running> {
    await this.clear();
    let done = 0;
    const add = async (n: number) => {
      await this.feedUtils.addJobs(Array.from({ length: n }, () => this.first(steps)));
    };
    await add(BACKLOG);
    const runner = await this.start(this.tasks(steps, () => undefined, () => done++));
    const feed = feeder(async () => (await this.monitor.query('SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE locked_at IS NULL')).rows[0].n, add);
    return {
      // Steps done / steps per chain: a FIFO backlog finishes chains in waves, steps at an even rate.
      completed: async () => done / steps,
      stop: async () => {
        await feed.stop();
        await this.stopRunner(runner);
      },
    };
  }

  async submission(): Promise<Running & { load(seconds: number): Promise<SubmitLoad> }> {
    await this.clear();
    let done = 0;
    const runner = await this.start(this.tasks(1, () => done++));
    return {
      completed: async () => done,
      stop: () => this.stopRunner(runner),
      load: (seconds) =>
        withRole('submit', () =>
          clientLoops(CONCURRENCY, now() + seconds * 1000, async () => {
            await this.utils.addJob('noop', {});
          }),
        ),
    };
  }

  async latency(steps: number): Promise<Running & { once(): Promise<void> }> {
    await this.clear();
    const waiters = new Waiters();
    let done = 0;
    const runner = await this.start(
      this.tasks(steps, (p) => {
        done++;
        waiters.done(p.id);
      }),
    );
    return {
      completed: async () => done,
      stop: () => this.stopRunner(runner),
      once: async () => {
        const id = waiters.id();
        const completed = waiters.wait(id);
        const job = this.first(steps, id);
        await this.utils.addJob(job.identifier, job.payload);
        await completed;
      },
    };
  }
}

// --- pg-boss -----------------------------------------------------------------------------------

class PgBossSide implements Side {
  readonly name = 'pg-boss';
  readonly shapes: ShapeKey[] = ['backlog-1', 'backlog-3', 'submit', 'latency-1', 'latency-3'];
  dbName = '';
  private drop?: () => Promise<void>;
  private monitor!: Pool;
  private boss?: PgBoss;
  private readonly errors: Error[] = [];

  async setup(): Promise<void> {
    const db = await createBenchDatabase('peers_boss');
    this.dbName = db.name;
    this.drop = db.drop;
    // Its pool sized like graphile-worker's: the fetch loops plus two.
    this.boss = new PgBoss({ connectionString: db.url.toString(), max: CONCURRENCY + 2 });
    this.boss.on('error', (e: Error) => this.errors.push(e));
    await this.boss.start();
    for (const q of ['noop', 'step']) await this.boss.createQueue(q);
    this.monitor = benchPool(db.url.toString());
  }

  async close(): Promise<void> {
    try {
      await bounded(this.boss?.stop({ graceful: false, wait: true }));
      await this.monitor?.end().catch(() => undefined);
    } finally {
      await this.drop?.();
    }
  }

  problems(): string[] {
    return []; // errors pg-boss reports end the benchmark (check)
  }

  private check(): void {
    if (this.errors.length) throw new Error(`pg-boss reported ${this.errors.length} errors, the first: ${this.errors[0].message}`);
  }

  private async clear(): Promise<void> {
    // Completed jobs stay in pg-boss's job table until its maintenance archives them.
    await this.monitor.query('TRUNCATE pgboss.job, pgboss.archive');
  }

  private queue(steps: number): string {
    return steps === 1 ? 'noop' : 'step';
  }

  /**
   * `concurrency` fetch loops (pg-boss's manual worker API): each fetches one job, runs it (a step
   * of a chain sends the next), completes it, calls `each()`, and fetches again at once while jobs come back; one
   * that finds nothing waits pg-boss's shortest polling interval. pg-boss's own `work()` waits its
   * polling interval after every fetch, which caps it at one batch per 0.5 s per worker.
   */
  private loops(steps: number, each: () => void): { stop(): Promise<void> } {
    const boss = this.boss!;
    const name = this.queue(steps);
    let stopped = false;
    const loops = Array.from({ length: CONCURRENCY }, async () => {
      while (!stopped) {
        const [job] = await boss.fetch<{ i?: number }>(name);
        if (!job) {
          await sleep(PGBOSS_POLL_MS);
          continue;
        }
        if (steps > 1 && (job.data.i ?? 1) < steps) await boss.send(name, { i: (job.data.i ?? 1) + 1 });
        await boss.complete(name, job.id);
        each();
      }
    });
    return {
      stop: async () => {
        stopped = true;
        await Promise.all(loops);
      },
    };
  }

  async backlog(steps: number): Promise<Running> {
    await this.clear();
    const name = this.queue(steps);
    const feedDb = { executeSql: (text: string, values: unknown[]) => this.monitor.query(text, values) };
    const add = async (n: number) => {
      await this.boss!.insert(Array.from({ length: n }, () => ({ name, data: steps === 1 ? {} : { i: 1 } })), { db: feedDb });
    };
    await add(BACKLOG);
    let done = 0;
    const loops = this.loops(steps, () => done++);
    const feed = feeder(async () => (await this.monitor.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state IN ('created', 'retry')`, [name])).rows[0].n, add);
    return {
      // Steps done / steps per chain: a FIFO backlog finishes chains in waves, steps at an even rate.
      completed: async () => done / steps,
      stop: async () => {
        await feed.stop();
        await loops.stop();
        this.check();
        await this.clear();
      },
    };
  }

  async submission(): Promise<Running & { load(seconds: number): Promise<SubmitLoad> }> {
    await this.clear();
    let done = 0;
    const loops = this.loops(1, () => done++);
    return {
      completed: async () => done,
      stop: async () => {
        await loops.stop();
        this.check();
        await this.clear();
      },
      load: (seconds) =>
        withRole('submit', () =>
          clientLoops(CONCURRENCY, now() + seconds * 1000, async () => {
            await this.boss!.send('noop', {});
          }),
        ),
    };
  }

  /** Latency with pg-boss's own `work()` at its shortest polling interval, as a latency-minded user would run it. */
  async latency(steps: number): Promise<Running & { once(): Promise<void> }> {
    await this.clear();
    const boss = this.boss!;
    const name = this.queue(steps);
    const waiters = new Waiters();
    let done = 0;
    const worker = await boss.work<{ i?: number; id: string }>(name, { pollingIntervalSeconds: PGBOSS_POLL_MS / 1000 }, async ([job]) => {
      if (steps > 1 && (job.data.i ?? 1) < steps) {
        await boss.send(name, { ...job.data, i: (job.data.i ?? 1) + 1 });
        return;
      }
      done++;
      waiters.done(job.data.id);
    });
    return {
      completed: async () => done,
      stop: async () => {
        await boss.offWork({ id: worker });
        this.check();
        await this.clear();
      },
      once: async () => {
        const id = waiters.id();
        const completed = waiters.wait(id);
        await boss.send(name, steps === 1 ? { id } : { i: 1, id });
        await completed;
      },
    };
  }
}

// --- phases ------------------------------------------------------------------------------------

async function meters(admin: Client, side: Side) {
  const machine = cpuMeter();
  const ownCpu = process.cpuUsage();
  const db = await dbActivityMeter(admin, side.dbName);
  return {
    async stop(items: number) {
      const cpu = machine.stop();
      const own = process.cpuUsage(ownCpu);
      const a = await db.stop();
      const per = (v: number) => (items > 0 ? v / items : NaN);
      const statements = Object.entries(a.statements).reduce((sum, [role, n]) => (role === 'bench' ? sum : sum + n), 0);
      return {
        cpu,
        pgCpuMs: a.backendCpuSec === undefined ? undefined : per(a.backendCpuSec * 1000),
        nodeCpuMs: per((own.user + own.system) / 1000),
        rows: per(a.rowsWritten),
        xacts: per(a.xacts),
        statements: per(statements),
        submitStatements: a.statements.submit !== undefined ? per(a.statements.submit) : undefined,
        ...(TRACE ? { texts: Object.fromEntries(Object.entries(a.texts).map(([t, n]) => [t, per(n)])) } : {}),
      };
    },
  };
}

async function backlogPhase(admin: Client, side: Side, shape: (typeof SHAPES)[number], round: number): Promise<Figures> {
  const running = await side.backlog(shape.steps);
  try {
    // Warm up from the first completion on (a host engine may wait for its periodic claim; a chain fills its later steps).
    const until = Date.now() + 60_000;
    while ((await running.completed()) === 0) {
      if (Date.now() > until) throw new Error(`${side.name}: nothing completed within 60 s of the backlog being fed`);
      await sleep(20);
    }
    await sleep(WARM_S * 1000);
    const before = await running.completed();
    const m = await meters(admin, side);
    const start = now();
    await sleep(WINDOW_S * 1000);
    // A window lasts until at least one item finished in it (short windows on a busy machine).
    let after = await running.completed();
    while (after === before && now() - start < 60_000) {
      await sleep(20);
      after = await running.completed();
    }
    const seconds = (now() - start) / 1000;
    const items = after - before;
    return { shape: shape.key, side: side.name, round, items, seconds, rate: items / seconds, ...(await m.stop(items)) };
  } finally {
    await running.stop();
  }
}

async function submitPhase(admin: Client, side: Side, shape: (typeof SHAPES)[number], round: number): Promise<Figures> {
  const running = await side.submission();
  try {
    await running.load(WARM_S);
    const m = await meters(admin, side);
    const load = await running.load(WINDOW_S);
    return { shape: shape.key, side: side.name, round, items: load.ok, seconds: load.seconds, rate: load.ok / load.seconds, p50Ms: load.p50Ms, p99Ms: load.p99Ms, ...(await m.stop(load.ok)) };
  } finally {
    await running.stop();
  }
}

async function latencyPhase(admin: Client, side: Side, shape: (typeof SHAPES)[number], round: number): Promise<Figures> {
  const running = await side.latency(shape.steps);
  // A short random pause between items, so a sequential loop does not lock onto a poller's period.
  const gap = () => sleep(5 + Math.random() * 20);
  try {
    const warmUntil = now() + WARM_S * 1000;
    for (let i = 0; !SHORT && (i < 2 || now() < warmUntil); i++) {
      await running.once();
      await gap();
    }
    const m = await meters(admin, side);
    const start = now();
    const samples: number[] = [];
    while (now() - start < WINDOW_S * 1000 || samples.length < MIN_SAMPLES) {
      const t = now();
      await running.once();
      samples.push(now() - t);
      await gap();
    }
    const seconds = (now() - start) / 1000;
    const figures = await m.stop(samples.length);
    samples.sort((a, b) => a - b);
    return { shape: shape.key, side: side.name, round, items: samples.length, seconds, rate: samples.length / seconds, p50Ms: percentile(samples, 50), p99Ms: percentile(samples, 99), ...figures };
  } finally {
    await running.stop();
  }
}

// --- report ------------------------------------------------------------------------------------

const f = (v: number | undefined, digits = 2) => (v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(digits));

function row(r: Figures): string {
  const shape = SHAPES.find((s) => s.key === r.shape)!.label;
  return [
    `  ${shape.padEnd(24)}${r.side.padEnd(26)}`,
    r.items.toFixed(0).padStart(7),
    f(r.rate, 1).padStart(9),
    f(r.p50Ms, 1).padStart(8),
    f(r.p99Ms, 1).padStart(8),
    f(r.pgCpuMs, 3).padStart(9),
    f(r.nodeCpuMs, 3).padStart(9),
    f(r.rows, 1).padStart(7),
    f(r.xacts, 2).padStart(7),
    f(r.statements, 2).padStart(7),
    f(r.submitStatements, 2).padStart(7),
    r.cpu ? `   ${r.cpu.busyCores.toFixed(2)} (${r.cpu.postgresCores.toFixed(2)})` : '',
  ].join('');
}

const HEADER = `  ${'shape'.padEnd(24)}${'side'.padEnd(26)}${'items'.padStart(7)}${'per s'.padStart(9)}${'p50 ms'.padStart(8)}${'p99 ms'.padStart(8)}${'pg ms'.padStart(9)}${'node ms'.padStart(9)}${'rows'.padStart(7)}${'xacts'.padStart(7)}${'stmts'.padStart(7)}${'submit'.padStart(7)}   cores busy (PostgreSQL)`;

interface SummaryLine {
  figure: string;
  values: number[];
  min: number;
  median: number;
  max: number;
  target?: string;
  met?: boolean;
}

function spread(values: number[]): { min: number; median: number; max: number } {
  const s = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (!s.length) return { min: NaN, median: NaN, max: NaN };
  const mid = Math.floor(s.length / 2);
  return { min: s[0], median: s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2, max: s[s.length - 1] };
}

function summarize(all: Figures[]): SummaryLine[] {
  const lines: SummaryLine[] = [];
  const get = (shape: ShapeKey, side: string, round: number) => all.find((r) => r.shape === shape && r.side === side && r.round === round);
  const rounds = [...new Set(all.map((r) => r.round))];
  const ratio = (figure: string, shape: ShapeKey, peer: string, pick: (r: Figures) => number | undefined, target?: { op: '>=' | '<='; value: number }) => {
    const values = rounds.map((round) => {
      const h = get(shape, 'host', round);
      const p = get(shape, peer, round);
      const a = h && pick(h);
      const b = p && pick(p);
      return a !== undefined && b !== undefined && b > 0 ? a / b : NaN;
    });
    if (!values.some((v) => Number.isFinite(v))) return;
    const s = spread(values);
    const line: SummaryLine = { figure, values, ...s };
    if (target) {
      line.target = `${target.op === '>=' ? '≥' : '≤'} ${target.value}`;
      line.met = target.op === '>=' ? s.median >= target.value : s.median <= target.value;
    }
    lines.push(line);
  };
  const gw = 'graphile-worker';
  const gwb = 'graphile-worker batched';
  const boss = 'pg-boss';
  const rate = (r: Figures) => r.rate;
  ratio('backlog 1 step, runs/s: host / graphile-worker (concurrency 16)', 'backlog-1', gw, rate, { op: '>=', value: 1 });
  ratio('backlog 1 step, runs/s: host / graphile-worker batched', 'backlog-1', gwb, rate, { op: '>=', value: 0.35 });
  ratio('backlog 1 step, runs/s: host / pg-boss', 'backlog-1', boss, rate);
  ratio('backlog 3 steps, runs/s: host / graphile-worker chains', 'backlog-3', gw, rate, { op: '>=', value: 3 });
  ratio('backlog 3 steps, runs/s: host / graphile-worker batched chains', 'backlog-3', gwb, rate);
  ratio('backlog 3 steps, runs/s: host / pg-boss chains', 'backlog-3', boss, rate, { op: '>=', value: 3 });
  ratio('submission, per s: host POST / graphile-worker addJob', 'submit', gw, rate, { op: '>=', value: 1 });
  ratio('submission, per s: host POST / pg-boss send', 'submit', boss, rate);
  ratio('idle latency 1 step, p50: host / graphile-worker', 'latency-1', gw, (r) => r.p50Ms, { op: '<=', value: 1.5 });
  ratio('idle latency 1 step, p99: host / graphile-worker', 'latency-1', gw, (r) => r.p99Ms, { op: '<=', value: 2 });
  ratio('idle latency 1 step, p50: host / pg-boss', 'latency-1', boss, (r) => r.p50Ms);
  ratio('idle latency 3 steps, p50: host / graphile-worker', 'latency-3', gw, (r) => r.p50Ms);
  ratio('idle latency 3 steps, p99: host / graphile-worker', 'latency-3', gw, (r) => r.p99Ms);
  ratio('idle latency 3 steps, p50: host / pg-boss', 'latency-3', boss, (r) => r.p50Ms);
  ratio('PostgreSQL CPU per item, backlog 1 step: host / graphile-worker', 'backlog-1', gw, (r) => r.pgCpuMs);
  ratio('PostgreSQL CPU per item, backlog 1 step: host / graphile-worker batched', 'backlog-1', gwb, (r) => r.pgCpuMs);
  ratio('PostgreSQL CPU per item, backlog 1 step: host / pg-boss', 'backlog-1', boss, (r) => r.pgCpuMs);
  ratio('rows written per item, backlog 1 step: host / graphile-worker', 'backlog-1', gw, (r) => r.rows);
  ratio('statements per item, backlog 1 step: host / graphile-worker', 'backlog-1', gw, (r) => r.statements);
  return lines;
}

/** Medians over the rounds of each side's absolute figures, per shape. */
function medians(all: Figures[]): Figures[] {
  const out: Figures[] = [];
  for (const shape of SHAPES) {
    for (const side of [...new Set(all.map((r) => r.side))]) {
      const rs = all.filter((r) => r.shape === shape.key && r.side === side);
      if (!rs.length) continue;
      const med = (pick: (r: Figures) => number | undefined) => {
        const v = rs.map(pick).filter((x): x is number => x !== undefined);
        return v.length ? spread(v).median : undefined;
      };
      out.push({
        shape: shape.key,
        side,
        round: 0,
        items: Math.round(med((r) => r.items) ?? 0),
        seconds: med((r) => r.seconds) ?? 0,
        rate: med((r) => r.rate) ?? NaN,
        p50Ms: med((r) => r.p50Ms),
        p99Ms: med((r) => r.p99Ms),
        pgCpuMs: med((r) => r.pgCpuMs),
        nodeCpuMs: med((r) => r.nodeCpuMs),
        rows: med((r) => r.rows) ?? NaN,
        xacts: med((r) => r.xacts) ?? NaN,
        statements: med((r) => r.statements) ?? NaN,
        submitStatements: med((r) => r.submitStatements),
      });
    }
  }
  return out;
}

async function main(): Promise<void> {
  const admin = new Client({ connectionString: ADMIN_URL, application_name: 'openwop-bench' });
  await admin.connect();
  const server = (await admin.query('SHOW server_version')).rows[0].server_version as string;
  if (/emscripten|pglite/i.test((await admin.query('SELECT version() AS v')).rows[0].v as string)) {
    await admin.end();
    throw new Error('the peer benchmark needs a PostgreSQL server (DATABASE_URL): the embedded engine runs inside one process, with no databases of their own or backends to measure');
  }
  const versions = ['graphile-worker', 'pg-boss'].map((p) => `${p} ${(JSON.parse(fs.readFileSync(require.resolve(`${p}/package.json`), 'utf8')) as { version: string }).version}`);
  countDriverQueries({ trace: TRACE });
  toleratePoolTeardown();
  const sides: Side[] = [new HostSide(), new GraphileSide('graphile-worker', false), new GraphileSide('graphile-worker batched', true), new PgBossSide()].filter(
    (s) => !ONLY_SIDES.length || ONLY_SIDES.includes(s.name),
  );
  const shapes = SHAPES.filter((s) => !ONLY_SHAPES.length || ONLY_SHAPES.includes(s.key));
  if (!sides.length || !shapes.length) throw new Error(`nothing to measure: --sides and --shapes name none of ${sides.map((s) => s.name).join(', ')} / ${SHAPES.map((s) => s.key).join(', ')}`);
  const all: Figures[] = [];
  // Others' work on a shared machine shows here: every side suffers it, not always equally.
  const loadBefore = os.loadavg()[0];
  try {
    for (const s of sides) {
      const t = now();
      await s.setup();
      process.stderr.write(`set up ${s.name} (${((now() - t) / 1000).toFixed(1)} s)\n`);
    }
    for (let round = 1; round <= ROUNDS; round++) {
      // Alternate the order of the sides from round to round, so a slow spell of the machine is shared.
      const order = round % 2 ? sides : [...sides].reverse();
      for (const shape of shapes) {
        for (const side of order.filter((s) => s.shapes.includes(shape.key))) {
          const t = now();
          const phase = shape.key === 'submit' ? submitPhase : shape.key.startsWith('latency') ? latencyPhase : backlogPhase;
          // Only the submission reports by role (statements of the submission itself); --trace reads them everywhere.
          labelRoles(TRACE || shape.key === 'submit');
          const figures = await phase(admin, side, shape, round);
          const problems = side.problems();
          if (problems.length) {
            figures.problems = problems;
            process.stderr.write(`round ${round}: ${shape.label}, ${side.name}: ${problems.join('; ')}\n`);
          }
          all.push(figures);
          process.stderr.write(`round ${round}: ${shape.label}, ${side.name} (${((now() - t) / 1000).toFixed(1)} s)\n`);
        }
      }
    }
  } finally {
    for (const s of sides) await s.close().catch((e: unknown) => process.stderr.write(`closing ${s.name}: ${(e as Error).message}\n`));
    await admin.end();
  }

  const loadAfter = os.loadavg()[0];
  const out = process.stdout;
  out.write(`\nPeer benchmark: the host beside ${versions.join(' and ')}, PostgreSQL ${server}, ${os.cpus().length} cores (1-minute load average ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after)\n`);
  out.write(`concurrency ${CONCURRENCY}, backlog ${BACKLOG}, ${ROUNDS} alternating round(s), ${WARM_S} s warm-up + ${WINDOW_S} s counted per phase${SHORT ? ' (short mode: a smoke test, the figures mean nothing)' : ''}\n`);
  out.write('per item: pg ms = CPU of the side\'s PostgreSQL backends, node ms = CPU of this process (the side, its clients, the feeder), rows = rows inserted+updated+deleted, xacts = transactions, stmts = statements (round trips), submit = statements of the submission itself\n');
  for (let round = 1; round <= ROUNDS; round++) {
    out.write(`\nround ${round}\n${HEADER}\n`);
    for (const r of all.filter((x) => x.round === round)) out.write(`${row(r)}\n`);
  }
  const med = medians(all);
  out.write(`\nmedians over the rounds\n${HEADER}\n`);
  for (const r of med) out.write(`${row(r)}\n`);
  const summary = summarize(all);
  out.write(`\nsame-round ratios (min / median / max over ${ROUNDS} round(s))\n`);
  for (const l of summary) {
    out.write(`  ${l.figure.padEnd(74)}${f(l.min).padStart(7)}${f(l.median).padStart(8)}${f(l.max).padStart(8)}${l.target ? `   target ${l.target}: ${l.met ? 'met' : 'NOT met'}` : ''}\n`);
  }
  const problems = all.filter((r) => r.problems?.length);
  if (problems.length) {
    out.write('\nitems that did not complete\n');
    for (const r of problems) out.write(`  round ${r.round}, ${SHAPES.find((s) => s.key === r.shape)!.label}, ${r.side}: ${r.problems!.join('; ')}\n`);
    process.exitCode = 1;
  }
  if (TRACE) {
    out.write(`\nstatements per item by role, round ${ROUNDS} (--trace)\n`);
    for (const r of all.filter((x) => x.round === ROUNDS)) {
      out.write(`  ${SHAPES.find((s) => s.key === r.shape)!.label}, ${r.side}\n`);
      for (const [text, n] of Object.entries(r.texts ?? {}).sort((a, b) => b[1] - a[1])) if (n >= 0.005 && !text.startsWith('bench: ')) out.write(`    ${n.toFixed(2).padStart(7)}  ${text}\n`);
    }
  }
  if (JSON_OUT) {
    fs.writeFileSync(JSON_OUT, JSON.stringify({ versions, server, loadAverage: { before: loadBefore, after: loadAfter }, concurrency: CONCURRENCY, backlog: BACKLOG, rounds: ROUNDS, warmSeconds: WARM_S, windowSeconds: WINDOW_S, short: SHORT, figures: all, medians: med, summary }, null, 2));
  }
}

runBenchmark(module, main);
