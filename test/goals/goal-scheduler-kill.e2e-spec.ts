/**
 * Two real host processes (`openwop-host serve`, scheduler on) share one database and an OpenWOP
 * runtime that honours idempotency keys. One of them is killed (SIGKILL) mid-tick: it holds a
 * claimed batch and its runtime requests are in flight. The other takes the batch over once the
 * leases expire. Every goal ends with exactly its iterations: none lost, none run or judged twice.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import * as path from 'node:path';
import { GoalsService } from '../../src/capabilities/goals/goals.service';
import type { Principal } from '../../src/platform/identity/principal';
import { createTestApp, TestApp } from '../support/test-app';
import { goalBody } from './goal-test-kit';
import { tempDirs } from '../support/temp-dirs';

const temp = tempDirs();

const GOALS = 200;
const ITERATIONS = 2;
const ROOT = path.join(__dirname, '..', '..');

/** A fake OpenWOP runtime: one run per Idempotency-Key; every run completes with output that never satisfies. */
class FakeRuntime {
  readonly runsByKey = new Map<string, string>();
  readonly posts: Array<{ replica: string; key: string }> = [];
  /** The runtime stops answering a replica's POST /v1/runs after this many (the request is received, the run created). */
  hangAfter = new Map<string, number>();
  readonly hung: ServerResponse[] = [];
  private server?: Server;

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    const addr = this.server.address();
    return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  }

  async stop(): Promise<void> {
    for (const res of this.hung) res.destroy();
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  hungOf(replica: string): number {
    return this.hung.filter((r) => (r as ServerResponse & { replica?: string }).replica === replica).length;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    for await (const _chunk of req) void _chunk;
    const replica = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    const url = new URL(req.url ?? '/', 'http://runtime');
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'POST' && url.pathname === '/v1/runs') {
      const key = String(req.headers['idempotency-key'] ?? '');
      if (!key) return json(400, { error: 'validation_error', message: 'Idempotency-Key is required' });
      this.posts.push({ replica, key });
      let runId = this.runsByKey.get(key);
      if (!runId) {
        runId = `run-${this.runsByKey.size + 1}`;
        this.runsByKey.set(key, runId);
      }
      const limit = this.hangAfter.get(replica);
      if (limit !== undefined && this.posts.filter((p) => p.replica === replica).length > limit) {
        (res as ServerResponse & { replica?: string }).replica = replica;
        this.hung.push(res);
        return;
      }
      return json(201, { runId, status: 'running' });
    }
    const run = /^\/v1\/runs\/([^/]+)(\/events\/poll)?$/.exec(url.pathname);
    if (req.method === 'GET' && run) {
      if (run[2]) return json(200, { events: [] });
      return json(200, { runId: decodeURIComponent(run[1]), status: 'completed', variables: { green: false } });
    }
    json(404, { error: 'not_found', message: 'no such route' });
  }
}

describe('goal scheduler: a host process killed mid-tick', () => {
  let t: TestApp;
  const runtime = new FakeRuntime();
  const children: ChildProcess[] = [];
  let configDir: string;

  const config = (baseUrl: string, apiKey: string) => ({
    goals: { leaseMs: 2000, batchSize: 50, concurrency: 8, retryDelayMs: 200, runtime: { baseUrl, apiKey, workflowId: 'wf-goal', pollIntervalMs: 50, requestTimeoutMs: 60_000 } },
  });

  function startReplica(name: string): { proc: ChildProcess; output: () => string } {
    const file = path.join(configDir, `${name}.json`);
    fs.writeFileSync(file, JSON.stringify(config(runtimeUrl, name)));
    const proc = spawn(process.execPath, [path.join(ROOT, 'bin', 'openwop-host.js'), 'serve'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: t.config.databaseUrl!,
        OPENWOP_CONFIG: file,
        OPENWOP_INSTANCE_ID: name,
        OPENWOP_SCHEDULER_ENABLED: 'true',
        OPENWOP_SCHEDULER_TICK_MS: '50',
        OPENWOP_BOOTSTRAP_KEY: 'false',
        OPENWOP_DATA_DIR: temp.make(`openwop-${name}-`),
        LOG_LEVEL: 'error',
        PORT: '0',
        HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    proc.stdout!.on('data', (c) => (out += String(c)));
    proc.stderr!.on('data', (c) => (out += String(c)));
    children.push(proc);
    return { proc, output: () => out };
  }

  let runtimeUrl: string;

  beforeAll(async () => {
    runtimeUrl = await runtime.start();
    configDir = temp.make('openwop-kill-');
    t = await createTestApp({ configFile: config(runtimeUrl, 'creator') });
  });

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await t?.close();
    await runtime.stop();
  });

  async function until(what: string, cond: () => boolean | Promise<boolean>, ms: number, output?: () => string): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await cond())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${output ? `\n${output()}` : ''}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it(`${GOALS} due goals, one of two processes killed mid-tick: 0 duplicate and 0 lost iterations`, async () => {
    const goals = t.moduleRef.get(GoalsService);
    const ids: string[] = [];
    for (let i = 0; i < GOALS; i++) {
      const owner: Principal = { tenant: `tenant-${i % 5}`, principal: 'alice', scopes: new Set(['goals:write', 'runs:create']), kind: 'system' };
      ids.push((await goals.create(owner, goalBody({ worker: 'openwop-runtime', bounds: { maxLoopIterations: ITERATIONS } }))).id);
    }

    // Replica A serves 20 starts, then its runtime requests hang: it is stuck mid-tick, holding a claimed batch.
    runtime.hangAfter.set('replica-a', 20);
    const a = startReplica('replica-a');
    await until('replica A to hang mid-tick', () => runtime.hungOf('replica-a') > 0, 60_000, a.output);
    const heldByA = (await t.ds.query(`SELECT count(*)::int AS n FROM "goal" WHERE "lease_owner" LIKE 'replica-a:%'`)) as Array<{ n: number }>;
    expect(heldByA[0].n).toBeGreaterThan(0);

    // Replica B starts working; then A is killed while both run and A's requests are still in flight.
    const b = startReplica('replica-b');
    await until('replica B to start runs', () => runtime.posts.some((p) => p.replica === 'replica-b'), 60_000, b.output);
    expect(runtime.hungOf('replica-a')).toBeGreaterThan(0);
    a.proc.kill('SIGKILL');
    await until('replica A to exit', () => a.proc.signalCode !== null || a.proc.exitCode !== null, 10_000);
    expect(a.proc.signalCode).toBe('SIGKILL');

    await until(
      'every goal to close',
      async () => ((await t.ds.query(`SELECT count(*)::int AS n FROM "goal" WHERE "id" = ANY($1) AND "state" = 'active'`, [ids])) as Array<{ n: number }>)[0].n === 0,
      90_000,
      b.output,
    );

    // None lost: every goal ran exactly its iterations and closed at the bound.
    const states = (await t.ds.query(`SELECT "state", "iterations", count(*)::int AS n FROM "goal" WHERE "id" = ANY($1) GROUP BY 1, 2`, [ids])) as Array<{ state: string; iterations: number; n: number }>;
    expect(states).toEqual([{ state: 'bound-exceeded', iterations: ITERATIONS, n: GOALS }]);
    // None twice: one verdict per (goal, iteration), one per run, one recorded run per verdict.
    const verdicts = (await t.ds.query(
      `SELECT "payload"->>'goalId' AS goal, "payload"->>'runId' AS run, ("payload"->>'iterations')::int AS iteration FROM "event" WHERE "type" = 'goal.evaluated' AND "payload"->>'goalId' = ANY($1)`,
      [ids],
    )) as Array<{ goal: string; run: string; iteration: number }>;
    expect(verdicts).toHaveLength(GOALS * ITERATIONS);
    expect(new Set(verdicts.map((v) => `${v.goal}#${v.iteration}`)).size).toBe(GOALS * ITERATIONS);
    expect(new Set(verdicts.map((v) => v.run)).size).toBe(GOALS * ITERATIONS);
    const recorded = (await t.ds.query(`SELECT "run_id" AS run FROM "goal_run" WHERE "goal_id" = ANY($1)`, [ids])) as Array<{ run: string }>;
    expect(recorded).toHaveLength(GOALS * ITERATIONS);
    // The runtime made exactly one run per iteration, and every run it made was recorded (including
    // the ones the killed replica started): B re-sent A's in-flight idempotency keys and got A's runs.
    const keysOfGoals = [...runtime.runsByKey.keys()].filter((k) => ids.includes(k.slice(0, 36)));
    expect(keysOfGoals).toHaveLength(GOALS * ITERATIONS);
    expect(new Set(recorded.map((r) => r.run))).toEqual(new Set(keysOfGoals.map((k) => runtime.runsByKey.get(k))));
    const sentByA = new Set(runtime.posts.filter((p) => p.replica === 'replica-a').map((p) => p.key));
    expect(runtime.posts.some((p) => p.replica === 'replica-b' && sentByA.has(p.key))).toBe(true);
  }, 240_000);
});
