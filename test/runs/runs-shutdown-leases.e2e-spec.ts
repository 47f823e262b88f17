/**
 * A stopping host hands the leases of its unfinished runs back before its database closes, on every
 * way it stops: SIGTERM (while another session keeps the database busy), SIGINT (with an event
 * stream still open, through the real `openwop-host serve`) and a fatal error (an uncaught exception). Each time a run waits in a long `core.delay`,
 * the host stops, a new one starts on the same data (the embedded data folder, or the server
 * database), and the run must be claimed again within seconds of that start, not once the lease
 * the first host took runs out (60 s here, so a lease kept cannot pass for one handed back).
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HostProcess, startHostProcess } from '../support/host-process';
import { createScratchDatabase } from '../support/scratch-db';

const BIN = path.join(__dirname, '../../bin/openwop-host.js');
const LEASE_MS = 60_000;
/** A run claimed again this soon after the next start was handed back (the claim runs at start, then every second). */
const RESUMED_WITHIN_MS = 8_000;
const SCOPES = ['runs:create', 'runs:read', 'runs:cancel'];

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Lease {
  lease_owner: string | null;
  fence: number;
  status: string;
}

type Query = HostProcess['query'];
const leaseOf = async (q: Query, runId: string): Promise<Lease | undefined> => (await q<Lease>(`SELECT "lease_owner", "fence", "status" FROM "run" WHERE "id" = $1`, [runId]))[0];

/** Starts a long run and answers it once its delay node has started under a lease. */
async function runInFlight(h: Pick<HostProcess, 'http' | 'query'>, key?: string): Promise<{ runId: string; held: Lease }> {
  const r = await h.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance-delay', inputs: { delayMs: 600_000 } } });
  expect(r.status).toBe(201);
  const runId = r.body.runId as string;
  const held = await until(
    'the run in flight',
    async () => {
      const [row] = await h.query<Lease & { started: boolean }>(
        `SELECT "lease_owner", "fence", "status", EXISTS (SELECT 1 FROM "event" WHERE "stream_key" = (SELECT "key" FROM "event_stream" WHERE "stream_id" = $2) AND "event_type_name"("code", "type") = 'node.started') AS "started" FROM "run" WHERE "id" = $1`,
        [runId, runId],
      );
      return row?.lease_owner && row.started ? row : undefined;
    },
    30_000,
  );
  return { runId, held };
}

/** After the next start is ready: the run is claimed again (a new fence, another owner) within seconds. */
async function expectResumed(q: Query, runId: string, held: Lease): Promise<void> {
  const readyAt = Date.now();
  const taken = await until('the run claimed again', async () => {
    const row = await leaseOf(q, runId);
    return row && row.fence > held.fence && row.lease_owner ? row : undefined;
  }, LEASE_MS + 30_000);
  const after = Date.now() - readyAt;
  expect(taken.lease_owner).not.toBe(held.lease_owner);
  expect(taken.status).toBe('running');
  expect(after).toBeLessThan(RESUMED_WITHIN_MS);
}

interface Engine {
  env: Record<string, string>;
  cleanup(): Promise<void>;
}

describe.each([
  ['the embedded engine', async (): Promise<Engine> => ({ env: {}, cleanup: async () => undefined })],
  [
    'a PostgreSQL server',
    async (): Promise<Engine> => {
      const db = await createScratchDatabase();
      return { env: { DATABASE_URL: db.url }, cleanup: () => db.drop() };
    },
  ],
])('runs: a stopping host hands its run leases back (%s)', (_label, makeEngine) => {
  let engine: Engine;
  let dir: string;
  let env: Record<string, string>;
  let key = '';
  const procs: ChildProcess[] = [];

  beforeAll(async () => {
    engine = await makeEngine();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-stop-'));
    fs.mkdirSync(path.join(dir, 'data'));
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ runs: { leaseMs: LEASE_MS } }));
    env = { ...engine.env, OPENWOP_DATA_DIR: path.join(dir, 'data'), OPENWOP_CONFIG: path.join(dir, 'config.json'), OPENWOP_TEST_SEAMS: 'true', OPENWOP_CONSOLE: 'false' };
  });

  afterAll(async () => {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    await engine?.cleanup();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const host = async (extra: Record<string, string> = {}) => {
    const h = await startHostProcess({ env: { ...env, ...extra }, scopes: SCOPES });
    procs.push(h.proc);
    key ||= h.key;
    return h;
  };
  const exited = (proc: ChildProcess) => new Promise<number | null>((r) => (proc.exitCode !== null || proc.signalCode !== null ? r(proc.exitCode) : proc.once('exit', (code) => r(code))));

  it('SIGTERM: the lease of the run in flight is handed back before the database closes, and the next start resumes it within seconds', async () => {
    // The handback reaches the database a second late, as on a busy machine: nothing may close the
    // database (or end the process) before it is through.
    const first = await host({ OPENWOP_TEST_SLOW_LEASE_RELEASE_MS: '1000' });
    const { runId, held } = await runInFlight(first);
    first.proc.kill('SIGTERM');
    expect(await exited(first.proc)).toBe(0);
    expect(first.logs.filter((l) => /"level":"(warn|error|fatal)"/.test(l) && /lease/i.test(l))).toEqual([]);
    // Read before anything claims it again (a host that executes no runs): nobody holds it.
    const reader = await startHostProcess({ env: { ...env, OPENWOP_SCHEDULER_ENABLED: 'false' }, scopes: SCOPES });
    procs.push(reader.proc);
    expect(await leaseOf(reader.query, runId)).toMatchObject({ lease_owner: null, fence: held.fence, status: 'running' });
    await reader.close();
    const next = await host();
    await expectResumed(next.query, runId, held);
    expect((await next.http('POST', `/v1/runs/${runId}/cancel`, { body: {} })).status).toBeLessThan(300);
    await next.close();
  }, 300_000);

  it('a fatal error (an uncaught exception): the host closes, exits 1, and the next start resumes the run within seconds', async () => {
    const first = await host();
    const { runId, held } = await runInFlight(first);
    first.proc.send('throw-uncaught');
    expect(await exited(first.proc)).toBe(1);
    expect(first.logs.some((l) => /"level":"fatal"/.test(l) && l.includes('an uncaught exception the test asked for'))).toBe(true);
    const next = await host();
    await expectResumed(next.query, runId, held);
    expect((await next.http('POST', `/v1/runs/${runId}/cancel`, { body: {} })).status).toBeLessThan(300);
    await next.close();
  }, 300_000);

  it('`openwop-host serve`, SIGINT with an event stream open: it stops within seconds (exit 0) and the next start resumes the run at once', async () => {
    // The real command line; its data is the one the host processes above used (their key is in it).
    const proc = spawn(process.execPath, [BIN, 'serve'], { env: { ...process.env, ...env, PORT: '0', LOG_LEVEL: 'info', OPENWOP_BOOTSTRAP_KEY: 'false', ...(engine.env.DATABASE_URL ? {} : { DATABASE_URL: '' }) }, stdio: ['ignore', 'pipe', 'pipe'] });
    procs.push(proc);
    const out: string[] = [];
    proc.stdout!.on('data', (d) => out.push(...String(d).split('\n').filter(Boolean)));
    proc.stderr!.on('data', (d) => out.push(...String(d).split('\n').filter(Boolean)));
    const base = await until('serve to listen', async () => {
      if (proc.exitCode !== null) throw new Error(`serve exited:\n${out.join('\n')}`);
      const b = out.map((l) => /"url":"(http:\/\/[^"]+)"/.exec(l)?.[1]).find(Boolean);
      return b && (await fetch(`${b}/readyz`)).status === 200 ? b : undefined;
    }, 150_000).catch((e: Error) => {
      throw new Error(`${e.message}\n${out.join('\n')}`);
    });
    const http: HostProcess['http'] = async (method, url, o = {}) => {
      const res = await fetch(`${base}${url}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
      return { status: res.status, headers: res.headers, body: await res.json().catch(() => undefined) };
    };
    // SQL through the serving process: the embedded engine's socket in the data folder, or the server.
    const { Client } = await import('pg');
    const query: Query = async <T,>(sql: string, params: unknown[] = []) => {
      const c = new Client(engine.env.DATABASE_URL ? { connectionString: engine.env.DATABASE_URL } : { host: env.OPENWOP_DATA_DIR, port: 5432, user: 'postgres', database: 'postgres' });
      await c.connect();
      try {
        return (await c.query(sql, params)).rows as T[];
      } finally {
        await c.end().catch(() => undefined);
      }
    };
    const { runId, held } = await runInFlight({ http, query });
    // A follower that never lets go of its stream.
    const follower = new AbortController();
    const stream = await fetch(`${base}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' }, signal: follower.signal });
    expect(stream.status).toBe(200);
    void stream.body?.getReader().read().catch(() => undefined);
    const stopAt = Date.now();
    proc.kill('SIGINT');
    const code = await exited(proc);
    const stopMs = Date.now() - stopAt;
    follower.abort();
    expect(code).toBe(0);
    expect(stopMs).toBeLessThan(10_000);
    const next = await host();
    await expectResumed(next.query, runId, held);
    expect((await next.http('POST', `/v1/runs/${runId}/cancel`, { body: {} })).status).toBeLessThan(300);
    await next.close();
  }, 300_000);
});
