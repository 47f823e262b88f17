/**
 * Benchmark of `GET /v1/tools` (RFC 0078) for one principal over 1,000 and 10,000 tools spread over
 * the node-pack, workflow, mcp and host-extension sources, against a bare Fastify route serving the
 * same pre-serialized array, measured in the same run with the same load (autocannon, 50
 * connections; bare and host windows alternate `rounds` times). Prints the throughput ratio, both
 * p99s and the host's RSS.
 *
 *   npm run bench -- tool-catalog [--duration 5] [--rounds 2] [--sizes 1000,10000]
 *
 * Needs PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres): each size
 * gets a scratch database that is dropped afterwards. Targets: throughput ≥ 0.5× bare, p99 ≤ 2×
 * bare, RSS < 300 MB at 10,000 tools.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFile } from 'node:child_process';
import Fastify from 'fastify';
import { Client } from 'pg';
import { createHost, Host } from '../src/bootstrap';
import { ArtifactRegistryService } from '../src/platform/artifacts/artifact-registry.service';
import { loadHostConfig } from '../src/platform/config/host-config';
import { ApiKeyService } from '../src/platform/identity/api-key.service';
import { BENCH_RATE_BUDGETS } from './harness';

const ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const FIXTURE = path.join(__dirname, '../test/fixtures/mcp/fixture-server.js');
const CONNECTIONS = 50;

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : dflt;
}

const DURATION_S = Number(arg('duration', '5'));
/** Bare and host windows alternate this many times (after one warm-up each), so a slow spell of the machine lands on both. */
const ROUNDS = Math.max(1, Number(arg('rounds', '2')));
const SIZES = arg('sizes', '1000,10000').split(',').map(Number);

async function admin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

interface Split {
  nodePack: number;
  workflow: number;
  mcp: number;
  hostExtension: number;
}

/** 30% node-pack, 20% workflow, 25% mcp, the rest host-extension (one of which is the built-in echo tool). */
function split(total: number): Split {
  const nodePack = Math.round(total * 0.3);
  const workflow = Math.round(total * 0.2);
  const mcp = Math.round(total * 0.25);
  return { nodePack, workflow, mcp, hostExtension: total - nodePack - workflow - mcp - 1 };
}

function nodePacks(count: number): Record<string, unknown>[] {
  const packs: Record<string, unknown>[] = [];
  for (let p = 0; p * 100 < count; p++) {
    const nodes = Array.from({ length: Math.min(100, count - p * 100) }, (_, i) => ({
      typeId: `vendor.bench.p${p}.node${i}`,
      version: '1.0.0',
      category: i % 2 ? 'integration' : 'data',
      role: i % 2 ? 'side-effect' : 'pure',
      label: `Bench node ${p}.${i}`,
      description: 'A node of the benchmark pack, projected as a tool.',
    }));
    packs.push({ name: `vendor.bench.pack${p}`, version: '1.0.0', engines: { openwop: '>=1.0.0' }, runtime: { language: 'javascript', entry: 'dist/index.js' }, nodes });
  }
  return packs;
}

function chainPacks(count: number): Record<string, unknown>[] {
  const packs: Record<string, unknown>[] = [];
  for (let p = 0; p * 50 < count; p++) {
    const chains = Array.from({ length: Math.min(50, count - p * 50) }, (_, i) => ({
      chainId: `vendor.bench.c${p}.chain${i}`,
      version: '1.0.0',
      label: `Bench chain ${p}.${i}`,
      description: 'A chain of the benchmark pack.',
      parameters: { type: 'object', properties: { input: { type: 'string' } } },
      dag: { nodes: [{ id: 'n1', typeId: 'core.noop' }] },
    }));
    packs.push({ name: `vendor.bench.chains${p}`, version: '1.0.0', kind: 'workflow-chain', engines: { openwop: '>=1.0.0' }, chains });
  }
  return packs;
}

interface Measured {
  rps: number;
  p99: number;
  non2xx: number;
}

/** Several windows of one server as one figure: mean throughput, mean p99, all non-2xx. */
function combine(ms: Measured[]): Measured {
  return {
    rps: ms.reduce((a, m) => a + m.rps, 0) / ms.length,
    p99: ms.reduce((a, m) => a + m.p99, 0) / ms.length,
    non2xx: ms.reduce((a, m) => a + m.non2xx, 0),
  };
}

const AUTOCANNON = require.resolve('autocannon/autocannon.js');

/**
 * One autocannon run in a child process, so the load generator neither competes with the servers
 * for this process's event loop nor counts in the host's RSS.
 */
function measure(url: string, token?: string): Promise<Measured> {
  const args = [AUTOCANNON, '-c', String(CONNECTIONS), '-d', String(DURATION_S), '-j'];
  if (token) args.push('-H', `authorization=Bearer ${token}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 }, (err, stdout) => {
      if (err) return reject(err);
      const res = JSON.parse(stdout) as { requests: { average: number }; latency: { p99: number }; non2xx: number; errors: number };
      resolve({ rps: res.requests.average, p99: res.latency.p99, non2xx: res.non2xx + res.errors });
    });
  });
}

async function bootHost(total: number, dir: string): Promise<{ host: Host; token: string; url: string; dbName: string }> {
  const dbName = `owb_${randomBytes(5).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE "${dbName}"`));
  const s = split(total);
  const state = path.join(dir, `mcp-${total}.json`);
  fs.writeFileSync(state, JSON.stringify({ pageSize: 500, extraTools: Array.from({ length: s.mcp - 5 }, (_, i) => `bench_tool_${i}`) }));
  const hostExtensions = Array.from({ length: s.hostExtension }, (_, i) => ({
    toolId: `x-host-bench-tool${String(i).padStart(5, '0')}`,
    title: `Bench tool ${i}`,
    description: 'A declared host-extension tool.',
    safetyTier: 'read',
    inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
    // Every tenth tool needs a scope the benchmark principal holds, every tenth+5 one it lacks.
    ...(i % 10 === 0 ? { auth: { scopes: ['tools:bench:granted'] } } : i % 10 === 5 ? { auth: { scopes: ['tools:bench:withheld'] } } : {}),
  }));
  const configFile = path.join(dir, `config-${total}.json`);
  fs.writeFileSync(
    configFile,
    JSON.stringify({
      tools: {
        cacheTtlMs: 60_000,
        hostExtensions,
        mcpServers: [{ id: 'bench', transport: 'stdio', command: process.execPath, args: [FIXTURE], env: { MCP_FIXTURE_STATE: state } }],
      },
    }),
  );
  const u = new URL(ADMIN_URL);
  u.pathname = `/${dbName}`;
  const config = loadHostConfig({
    ...BENCH_RATE_BUDGETS,
    ...process.env,
    DATABASE_URL: u.toString(),
    OPENWOP_CONFIG: configFile,
    LOG_LEVEL: 'warn',
    OPENWOP_BOOTSTRAP_KEY: 'false',
    OPENWOP_SCHEDULER_ENABLED: 'false',
    OPENWOP_DATA_DIR: dir,
    OPENWOP_TOOL_SOURCE_TIMEOUT_MS: '30000',
  });
  const host = await createHost(config, { openApi: false });
  const registry = host.app.get(ArtifactRegistryService);
  const scope = { tenant: 'default', principal: 'bench' };
  for (const p of nodePacks(s.nodePack)) await registry.install('node-pack', p, scope, 'bench');
  for (const p of chainPacks(s.workflow)) await registry.install('workflow-chain-pack', p, scope, 'bench');
  const { key } = await host.app.get(ApiKeyService).create({ tenant: 'default', principal: 'bench', scopes: ['tools:read', 'tools:bench:granted'] });
  await host.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (host.app.getHttpServer().address() as AddressInfo).port;
  return { host, token: key, url: `http://127.0.0.1:${port}/v1/tools`, dbName };
}

async function main(): Promise<void> {
  if (SIZES.length > 1) {
    let code = 0;
    const rows: string[] = [];
    for (const size of SIZES) {
      const out = await new Promise<{ code: number; stdout: string }>((resolve) => {
        const args = [...process.execArgv, __filename, '--sizes', String(size), '--duration', String(DURATION_S), '--rounds', String(ROUNDS)];
        execFile(process.execPath, args, { maxBuffer: 16 * 1024 * 1024, env: process.env }, (err, stdout, stderr) => {
          if (stderr.trim()) process.stderr.write(stderr.split('\n').filter((l) => !l.includes('"level":"warn"')).join('\n'));
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout });
        });
      });
      code = Math.max(code, out.code);
      rows.push(...out.stdout.split('\n').filter((l) => l.startsWith('  ')));
    }
    console.log(`GET /v1/tools vs bare Fastify, ${CONNECTIONS} connections, ${ROUNDS} alternating windows of ${DURATION_S}s each (targets: ≥0.5x throughput, ≤2x p99, RSS < 300 MB at 10k)`);
    for (const r of rows) console.log(r);
    process.exitCode = code;
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-bench-'));
  const rows: string[] = [];
  let failed = false;
  for (const total of SIZES) {
    const { host, token, url, dbName } = await bootHost(total, dir);
    try {
      const first = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      const body = await first.text();
      const count = (JSON.parse(body) as unknown[]).length;
      const bytes = Buffer.from(body, 'utf8');
      const bare = Fastify();
      bare.get('/v1/tools', (_req, reply) => reply.type('application/json; charset=utf-8').send(bytes));
      await bare.listen({ port: 0, host: '127.0.0.1' });
      const bareUrl = `http://127.0.0.1:${(bare.server.address() as AddressInfo).port}/v1/tools`;
      // Warm both paths, then measure bare and host with the same load, alternating.
      await measure(bareUrl).catch(() => undefined);
      await measure(url, token).catch(() => undefined);
      let peak = process.memoryUsage().rss;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 100);
      const bares: Measured[] = [];
      const hosts: Measured[] = [];
      try {
        for (let r = 0; r < ROUNDS; r++) {
          bares.push(await measure(bareUrl));
          hosts.push(await measure(url, token));
        }
      } finally {
        clearInterval(sampler);
      }
      const b = combine(bares);
      const h = combine(hosts);
      const rss = peak / 1024 / 1024;
      await bare.close();
      const ratio = h.rps / b.rps;
      const p99Ratio = h.p99 / Math.max(b.p99, 1);
      const ok = ratio >= 0.5 && p99Ratio <= 2 && (total < 10_000 || rss < 300) && h.non2xx === 0;
      failed ||= !ok;
      rows.push(
        [
          `${total} tools (${count} visible, ${(body.length / 1024).toFixed(0)} KiB)`,
          `host ${h.rps.toFixed(0)} req/s p99 ${h.p99} ms`,
          `bare ${b.rps.toFixed(0)} req/s p99 ${b.p99} ms`,
          `throughput ${ratio.toFixed(2)}x`,
          `p99 ${p99Ratio.toFixed(2)}x`,
          `peak RSS ${rss.toFixed(0)} MB`,
          h.non2xx ? `${h.non2xx} non-2xx!` : '',
          ok ? 'OK' : 'MISSES TARGET',
        ]
          .filter(Boolean)
          .join(' | '),
      );
      console.log(rows[rows.length - 1]);
    } finally {
      await host.close();
      await admin((c) => c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`));
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
  console.log(`\nGET /v1/tools vs bare Fastify, ${CONNECTIONS} connections, ${ROUNDS} alternating windows of ${DURATION_S}s each (targets: ≥0.5x throughput, ≤2x p99, RSS < 300 MB at 10k)`);
  for (const r of rows) console.log(`  ${r}`);
  process.exitCode = failed ? 1 : 0;
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
