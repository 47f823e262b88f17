/**
 * gRPC against REST on the same engine: CreateRun throughput (runs created per second, `concurrency`
 * calls in flight) and GetRun latency (one call at a time), over `POST /v1/runs` / `GET /v1/runs/{id}`
 * with node:http keep-alive and over openwop.v1.Engine with one grpc-js channel. One host, one
 * database; the clients run in a second process so that they do not share the host's event loop.
 * Each round measures both transports, alternating which goes first; the figures are the min /
 * median / max over the rounds. A measurement, not a test.
 *
 *   npm run bench -- grpc [rounds=3] [secondsPerWindow=5] [concurrency=16]
 *
 * Runs are created with the scheduler off, so the engine does not execute them: the figures are the
 * request path (authentication, rate limits, validation, the run insert and its first event).
 */
import { fork } from 'node:child_process';
import * as http from 'node:http';
import * as grpc from '@grpc/grpc-js';
import { ApiKeyService } from '../src/platform/identity/api-key.service';
import { ArtifactRegistryService } from '../src/platform/artifacts/artifact-registry.service';
import { GrpcListener } from '../src/transport/grpc/grpc-listener';
import { runBenchmark, startBenchHost } from './harness';

const WORKFLOW = 'vendor.bench.grpc.chain';

interface Job {
  transport: 'rest' | 'grpc';
  op: 'create' | 'get';
  seconds: number;
  concurrency: number;
}

interface WindowResult {
  count: number;
  errors: number;
  seconds: number;
  /** Latencies in ms, sorted. */
  latencies: number[];
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function stats(values: number[]): { min: number; median: number; max: number } {
  const s = [...values].sort((a, b) => a - b);
  return { min: s[0], median: s[Math.floor(s.length / 2)], max: s[s.length - 1] };
}

// ------------------------------------------------------------------------------------------------
// The client process

async function client(args: string[]): Promise<void> {
  const [baseUrl, target, key, runId] = args;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const base = new URL(baseUrl);
  const rest = (method: string, path: string, body?: string) =>
    new Promise<number>((resolve, reject) => {
      const req = http.request({ host: base.hostname, port: base.port, path, method, agent, headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}) } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end(body);
    });
  const { engineJsonCodec, loadEnginePackageDefinition, ENGINE_SERVICE } = await import('../src/transport/grpc/engine-proto');
  const definition = loadEnginePackageDefinition();
  const codec = engineJsonCodec();
  const Engine = grpc.makeGenericClientConstructor(definition[ENGINE_SERVICE] as unknown as grpc.ServiceDefinition, 'Engine');
  const engine = new Engine(target, grpc.credentials.createInsecure()) as unknown as Record<string, (req: unknown, md: grpc.Metadata, cb: (e: grpc.ServiceError | null) => void) => void>;
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${key}`);
  const createBody = { workflowId: WORKFLOW, inputs: { n: 1 } };
  const createJson = JSON.stringify(createBody);
  const createMessage = codec.fromJson('openwop.v1.CreateRunRequest', createBody);
  const getMessage = codec.fromJson('openwop.v1.GetRunRequest', { runId });
  const unary = (method: string, message: unknown) => new Promise<boolean>((resolve) => engine[method](message, md, (e) => resolve(!e)));

  const once = async (job: Job): Promise<boolean> => {
    if (job.transport === 'rest') return job.op === 'create' ? (await rest('POST', '/v1/runs', createJson)) === 201 : (await rest('GET', `/v1/runs/${runId}`)) === 200;
    return job.op === 'create' ? unary('CreateRun', createMessage) : unary('GetRun', getMessage);
  };

  const window = async (job: Job): Promise<WindowResult> => {
    const latencies: number[] = [];
    let errors = 0;
    const started = process.hrtime.bigint();
    const until = Date.now() + job.seconds * 1000;
    await Promise.all(
      Array.from({ length: job.concurrency }, async () => {
        while (Date.now() < until) {
          const t0 = process.hrtime.bigint();
          const ok = await once(job);
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
          if (!ok) errors++;
        }
      }),
    );
    return { count: latencies.length, errors, seconds: Number(process.hrtime.bigint() - started) / 1e9, latencies: latencies.sort((a, b) => a - b) };
  };
  process.on('disconnect', () => process.exit(0));
  process.on('message', (m: { job?: Job; exit?: boolean }) => {
    if (m.exit) {
      agent.destroy();
      (engine as unknown as grpc.Client).close();
      process.exit(0);
    }
    if (m.job) void window(m.job).then((result) => process.send!({ result }));
  });
  process.send!({ ready: true });
}

// ------------------------------------------------------------------------------------------------
// The benchmark

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 3);
  const seconds = Number(process.argv[3] ?? 5);
  const concurrency = Number(process.argv[4] ?? 16);
  const bench = await startBenchHost({ OPENWOP_GRPC_PORT: '0', OPENWOP_GRPC_HOST: '127.0.0.1' });
  try {
    const { port } = await bench.host.app.get(GrpcListener).start();
    const { key } = await bench.host.app.get(ApiKeyService).create({ tenant: 'bench', principal: 'bench', scopes: ['runs:create', 'runs:read'] });
    const nodes = [{ id: 'n1', typeId: 'core.noop', config: { step: 1 } }];
    await bench.host.app.get(ArtifactRegistryService).install(
      'workflow-chain-pack',
      { name: 'vendor.bench.grpc', version: '1.0.0', kind: 'workflow-chain', engines: { openwop: '^1.0.0' }, chains: [{ chainId: WORKFLOW, version: '1.0.0', label: 'bench', description: 'bench', parameters: { type: 'object' }, dag: { nodes, edges: [] } }] },
      { tenant: 'bench', principal: 'bench' },
      'bench',
    );
    const created = await fetch(`${bench.baseUrl}/v1/runs`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ workflowId: WORKFLOW }) });
    if (created.status !== 201) throw new Error(`POST /v1/runs answered ${created.status}: ${await created.text()}`);
    const runId = ((await created.json()) as { runId: string }).runId;

    const child = fork(__filename, ['--child', bench.baseUrl, `127.0.0.1:${port}`, key, runId], { execArgv: ['-r', '@swc-node/register'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`the bench client exited with ${code}`)));
    });
    const run = (job: Job) =>
      new Promise<WindowResult>((resolve) => {
        child.once('message', (m: { result: WindowResult }) => resolve(m.result));
        child.send({ job });
      });
    try {
      process.stderr.write(`warm-up (${seconds}s per transport)...\n`);
      for (const transport of ['rest', 'grpc'] as const) {
        await run({ transport, op: 'create', seconds: Math.max(1, seconds / 2), concurrency });
        await run({ transport, op: 'get', seconds: Math.max(1, seconds / 2), concurrency: 1 });
      }
      const figures = { rest: { create: [] as number[], p50: [] as number[], p99: [] as number[] }, grpc: { create: [] as number[], p50: [] as number[], p99: [] as number[] } };
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? (['rest', 'grpc'] as const) : (['grpc', 'rest'] as const);
        for (const transport of order) {
          const c = await run({ transport, op: 'create', seconds, concurrency });
          if (c.errors) throw new Error(`${transport} CreateRun: ${c.errors} errors`);
          figures[transport].create.push(c.count / c.seconds);
        }
        for (const transport of order) {
          const g = await run({ transport, op: 'get', seconds, concurrency: 1 });
          if (g.errors) throw new Error(`${transport} GetRun: ${g.errors} errors`);
          figures[transport].p50.push(percentile(g.latencies, 50));
          figures[transport].p99.push(percentile(g.latencies, 99));
        }
        process.stderr.write(
          `round ${r + 1}: CreateRun REST ${figures.rest.create[r].toFixed(0)}/s gRPC ${figures.grpc.create[r].toFixed(0)}/s; GetRun p50 REST ${figures.rest.p50[r].toFixed(2)} ms gRPC ${figures.grpc.p50[r].toFixed(2)} ms\n`,
        );
      }
      const fmt = (v: { min: number; median: number; max: number }, digits: number) => `${v.min.toFixed(digits)} / ${v.median.toFixed(digits)} / ${v.max.toFixed(digits)}`;
      console.log(`gRPC vs REST, same host and database; ${rounds} rounds of ${seconds}s windows, alternating; min / median / max`);
      console.log(`CreateRun, ${concurrency} in flight (runs/s)   REST ${fmt(stats(figures.rest.create), 0)}   gRPC ${fmt(stats(figures.grpc.create), 0)}`);
      console.log(`GetRun, one at a time, p50 (ms)        REST ${fmt(stats(figures.rest.p50), 2)}   gRPC ${fmt(stats(figures.grpc.p50), 2)}`);
      console.log(`GetRun, one at a time, p99 (ms)        REST ${fmt(stats(figures.rest.p99), 2)}   gRPC ${fmt(stats(figures.grpc.p99), 2)}`);
      const ratio = figures.grpc.create.map((g, i) => g / figures.rest.create[i]);
      const lat = figures.grpc.p50.map((g, i) => g / figures.rest.p50[i]);
      console.log(`per round, gRPC / REST: CreateRun throughput ${ratio.map((x) => x.toFixed(2)).join(', ')}; GetRun p50 ${lat.map((x) => x.toFixed(2)).join(', ')}`);
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ exit: true });
      await exited;
    }
  } finally {
    await bench.close();
  }
}

runBenchmark(module, main, client);
