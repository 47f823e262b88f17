/**
 * The processes of the peer benchmark's process mode (bench/peers-process.ts), each a process of its
 * own as in a user's deployment, started as `node -r <root>/bin/ts-register.js <this file> <role> ...`:
 *
 * - `prepare <root> <url> <out>`: boots the host of the checkout at `root` in process on a new database
 *   (migrating it), installs the benchmark's one-step chain, mints an API key and writes it to `out`;
 *   the database is then a template every round copies;
 * - `client host <base> <key> <concurrency> [idle request]`: a client of the host's public API over keep-alive HTTP;
 * - `client graphile-worker <url> <socket> <concurrency>`: a client of graphile-worker (`addJob` of
 *   `makeWorkerUtils`), told by the worker over a Unix socket when a job's handler ran;
 * - `worker <url> <socket> <concurrency>`: graphile-worker's worker, its handler writing the job's id
 *   to that socket.
 *
 * A client answers the benchmark's messages over IPC: `{ op: 'submit', count }` (`count` submissions,
 * `concurrency` in flight) and `{ op: 'latency', count }` (one item at a time: submit, then wait for its
 * completion, with a 5-25 ms pause between items). It imports nothing of the host: its cost is the
 * client's, as a user's would be.
 */
import 'reflect-metadata';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Pool } from 'pg';
import { Waiters } from './waiters';

export const WORKFLOW_ID = 'bench.steps1';
const TENANT = 'bench';

export interface SubmitResult {
  ok: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
}

export interface ClientMessage {
  op: 'submit' | 'latency' | 'exit';
  count?: number;
  /** The pause between idle items, ms: a random one from `pause[0]` to `pause[1]` (0 and 0: back to back). */
  pause?: [number, number];
}

/**
 * What one idle item of the host's client does (`--idle-request`): `stream`, the default, creates a run
 * and follows its event stream until `run.completed` (what a user's client waits for, and what the
 * targets against graphile-worker are measured on); `wait` creates it with `Prefer: wait=30` and reads
 * `completed` in the 201 itself (the one-request way to wait for a short run); the others measure one
 * request of an item at a time: `post` only creates the run (its 201), `events` reads the event stream
 * and `read` the snapshot (`GET /v1/runs/{runId}`) of one completed run created before the items.
 */
export const IDLE_REQUESTS = ['stream', 'wait', 'post', 'events', 'read'] as const;
/** The idle items that are a whole item (a run created and its completion observed), like graphile-worker's job run. */
export const WHOLE_IDLE_ITEMS: readonly IdleRequest[] = ['stream', 'wait'];
export type IdleRequest = (typeof IDLE_REQUESTS)[number];

interface Driver {
  submit(): Promise<void>;
  /** One item: submitted, then its completion observed. */
  once(): Promise<void>;
  /** What the items need before the first is timed. */
  prepare?(): Promise<void>;
  close(): Promise<void>;
}

const now = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

// --- the host's client ---------------------------------------------------------------------------

function hostDriver(base: string, key: string, concurrency: number, idle: IdleRequest = 'stream'): Driver {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const auth = `Bearer ${key}`;
  const body = JSON.stringify({ workflowId: WORKFLOW_ID });
  const post = (extra: Record<string, string> = {}) =>
    new Promise<string>((resolve, reject) => {
      const req = http.request(`${base}/v1/runs`, { method: 'POST', agent, headers: { authorization: auth, 'content-type': 'application/json', ...extra } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => (res.statusCode === 201 ? resolve(text) : reject(new Error(`host: POST /v1/runs answered ${res.statusCode}: ${text.slice(0, 300)}`))));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  /** Reads the run's event stream (SSE) until its terminal event: what a user's client waits for. */
  const follow = (runId: string) =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(`${base}/v1/runs/${runId}/events`, { agent, headers: { authorization: auth, accept: 'text/event-stream' } }, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return reject(new Error(`host: the event stream answered ${res.statusCode}`));
        }
        let text = '';
        let settled = false;
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          if (settled) return;
          text += c;
          const terminal = /^event: (run\.completed|run\.failed|run\.cancelled)$/m.exec(text);
          if (!terminal) return;
          settled = true;
          if (terminal[1] === 'run.completed') resolve();
          else reject(new Error(`host: run ${runId} ended with ${terminal[1]}`));
        });
        res.on('end', () => settled || reject(new Error(`host: the event stream of ${runId} ended without a terminal event`)));
        res.on('error', reject);
      });
      req.setTimeout(30_000, () => req.destroy(new Error(`host: run ${runId} did not complete within 30 s`)));
      req.on('error', reject);
      req.end();
    });
  /** A completed run's snapshot, read to its end. */
  const read = (runId: string) =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(`${base}/v1/runs/${runId}`, { agent, headers: { authorization: auth } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`host: GET /v1/runs/${runId} answered ${res.statusCode}`))));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
  let completed: Promise<string> | undefined;
  /** The run the `events` and `read` items read: created once, and followed until it completed. */
  const oneRun = () =>
    (completed ??= post().then(async (text) => {
      const runId = (JSON.parse(text) as { runId: string }).runId;
      await follow(runId);
      return runId;
    }));
  const once: Record<IdleRequest, () => Promise<void>> = {
    stream: async () => follow((JSON.parse(await post()) as { runId: string }).runId),
    wait: async () => {
      const run = JSON.parse(await post({ prefer: 'wait=30' })) as { runId: string; status: string };
      if (run.status !== 'completed') throw new Error(`host: run ${run.runId} answered ${run.status} after Prefer: wait=30`);
    },
    post: async () => {
      await post();
    },
    events: async () => follow(await oneRun()),
    read: async () => read(await oneRun()),
  };
  return {
    submit: async () => {
      await post();
    },
    once: once[idle],
    prepare: idle === 'events' || idle === 'read' ? async () => void (await oneRun()) : undefined,
    close: async () => agent.destroy(),
  };
}

// --- graphile-worker's client and worker --------------------------------------------------------

async function quietLogger() {
  const { Logger } = await import('graphile-worker');
  return new Logger(() => () => undefined);
}

async function graphileDriver(url: string, socketPath: string, concurrency: number): Promise<Driver> {
  const { makeWorkerUtils } = await import('graphile-worker');
  // One connection per submission in flight, as the host's client has one socket per submission in flight.
  const pool = new Pool({ connectionString: url, max: concurrency });
  pool.on('error', () => undefined);
  pool.on('connect', (c) => c.on('error', () => undefined));
  const utils = await makeWorkerUtils({ pgPool: pool, logger: await quietLogger() });
  const waiters = new Waiters(`w${process.pid}-`);
  const server = net.createServer((socket) => {
    let buffered = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
        waiters.done(buffered.slice(0, i));
        buffered = buffered.slice(i + 1);
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  return {
    submit: async () => {
      await utils.addJob('noop', {});
    },
    once: async () => {
      const id = waiters.id();
      const completed = waiters.wait(id);
      await utils.addJob('noop', { id });
      await completed;
    },
    close: async () => {
      server.close();
      await utils.release();
      await pool.end();
    },
  };
}

async function worker(url: string, socketPath: string, concurrency: number): Promise<void> {
  const { run } = await import('graphile-worker');
  const socket = net.connect(socketPath);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  // graphile-worker's own logger, as a user runs it (a line per completed job, like the host's line per request).
  const runner = await run({
    connectionString: url,
    concurrency,
    maxPoolSize: concurrency + 2,
    noHandleSignals: true,
    taskList: {
      noop: async (payload) => {
        const id = (payload as { id?: string } | null)?.id;
        if (id) socket.write(`${id}\n`);
      },
    },
  });
  process.on('message', (m: ClientMessage) => {
    if (m.op === 'exit') void runner.stop().finally(() => process.exit(0));
  });
  process.on('disconnect', () => process.exit(0));
  process.send!({ ready: true });
}

// --- the client loop -----------------------------------------------------------------------------

async function submitLoad(driver: Driver, count: number, concurrency: number): Promise<SubmitResult> {
  const times: number[] = [];
  let next = 0;
  const started = now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next++;
        const t = now();
        await driver.submit();
        times.push(now() - t);
      }
    }),
  );
  const seconds = (now() - started) / 1000;
  times.sort((a, b) => a - b);
  return { ok: times.length, seconds, p50Ms: percentile(times, 50), p99Ms: percentile(times, 99) };
}

async function latencyLoad(driver: Driver, count: number, pause: [number, number] = [5, 25]): Promise<number[]> {
  await driver.prepare?.();
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = now();
    await driver.once();
    samples.push(now() - t);
    // A short random pause, so a sequential loop does not lock onto a poller's period.
    if (pause[1] > 0) await sleep(pause[0] + Math.random() * (pause[1] - pause[0]));
  }
  return samples;
}

async function client(side: string, args: string[]): Promise<void> {
  const concurrency = Number(args[2]);
  const driver = side === 'graphile-worker' ? await graphileDriver(args[0], args[1], concurrency) : hostDriver(args[0], args[1], concurrency, (args[3] as IdleRequest | undefined) ?? 'stream');
  process.on('disconnect', () => process.exit(0));
  process.on('message', (m: ClientMessage) => {
    const answer = async () => {
      if (m.op === 'exit') {
        await driver.close();
        process.exit(0);
      }
      if (m.op === 'submit') return { submit: await submitLoad(driver, m.count!, concurrency) };
      return { samples: await latencyLoad(driver, m.count!, m.pause) };
    };
    answer().then(
      (a) => process.send!(a),
      (e: unknown) => process.send!({ error: (e as Error).message }),
    );
  });
  process.send!({ ready: true });
}

// --- preparing the host's template database ------------------------------------------------------

async function prepare(root: string, url: string, out: string): Promise<void> {
  const load = <T>(file: string): T => require(path.join(root, file)) as T;
  const { createHost } = load<typeof import('../../src/bootstrap')>('src/bootstrap');
  const { loadHostConfig } = load<typeof import('../../src/platform/config/host-config')>('src/platform/config/host-config');
  const { ArtifactRegistryService } = load<typeof import('../../src/platform/artifacts/artifact-registry.service')>('src/platform/artifacts/artifact-registry.service');
  const { ApiKeyService } = load<typeof import('../../src/platform/identity/api-key.service')>('src/platform/identity/api-key.service');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-bench-peers-'));
  const env = { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn', OPENWOP_BOOTSTRAP_KEY: 'false', OPENWOP_SCHEDULER_ENABLED: 'false', OPENWOP_DATA_DIR: dataDir };
  const host = await createHost(loadHostConfig(env), { openApi: false });
  try {
    const dag = { nodes: [{ id: 'n1', typeId: 'core.noop', config: { step: 1 } }], edges: [] };
    const chains = [{ chainId: WORKFLOW_ID, version: '1.0.0', label: 'one no-op step', description: 'one core.noop node', parameters: { type: 'object' }, dag }];
    const pack = { name: 'private.bench.peers', version: '1.0.0', kind: 'workflow-chain', engines: { openwop: '^1.0.0' }, chains };
    await host.app.get(ArtifactRegistryService).install('workflow-chain-pack', pack, { tenant: TENANT, principal: 'bench' }, 'bench');
    const { key } = await host.app.get(ApiKeyService).create({ tenant: TENANT, principal: 'bench', scopes: ['runs:create', 'runs:read'] });
    fs.writeFileSync(out, key);
  } finally {
    await host.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  process.exit(0);
}

if (require.main === module) {
  const [role, ...args] = process.argv.slice(2);
  const started = role === 'prepare' ? prepare(args[0], args[1], args[2]) : role === 'worker' ? worker(args[0], args[1], Number(args[2])) : client(role === 'client' ? args[0] : '', args.slice(1));
  started.catch((e: unknown) => {
    process.stderr.write(`${(e as Error).stack ?? e}\n`);
    process.exit(1);
  });
}
