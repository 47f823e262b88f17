/**
 * On the embedded engine (`openwop-host serve` without DATABASE_URL) concurrent creates share their
 * insert too. Its statements run one at a time on the host's own thread, so an insert never waits
 * behind another in flight: each create's insert waits for the end of its turn of the event loop
 * instead (run-insert-batcher.ts, `leaveWhenIdle` off), and the creates read in that turn leave as
 * one statement. Measured over real HTTP from another process's sockets, as `npm start` serves them:
 * runs written by one statement share its transaction's time (`created_at`, read through the
 * engine's socket). With each insert leaving at once, every run of a burst had a time of its own.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';

const BIN = path.join(__dirname, '../../bin/openwop-host.js');

describe('runs: concurrent creates share one insert statement on the embedded engine', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-embedded-batch-'));
  const env: NodeJS.ProcessEnv = { ...process.env, OPENWOP_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info', OPENWOP_TEST_SEAMS: 'true', OPENWOP_CONSOLE: 'false' };
  delete env.DATABASE_URL;
  let proc: ChildProcess | undefined;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

  afterAll(async () => {
    agent.destroy();
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc!.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const post = (base: string, key: string, i: number) =>
    new Promise<{ status: number; runId: string }>((resolve, reject) => {
      const req = http.request(`${base}/v1/runs`, { method: 'POST', agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, runId: (JSON.parse(text) as { runId: string }).runId }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ workflowId: 'conformance-noop', inputs: { i } }));
    });

  it('writes a burst of 16 concurrent creates in fewer statements than runs, each request answered with its own run', async () => {
    proc = spawn(process.execPath, [BIN, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: string[] = [];
    proc.stdout!.on('data', (d) => out.push(...String(d).split('\n').filter(Boolean)));
    proc.stderr!.on('data', (d) => out.push(...String(d).split('\n').filter(Boolean)));
    let base = '';
    for (const until = Date.now() + 120_000; !base; await new Promise((r) => setTimeout(r, 100))) {
      const url = out.map((l) => /"url":"(http:\/\/[^"]+)"/.exec(l)?.[1]).find(Boolean);
      if (url && (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200) base = url;
      if (proc.exitCode !== null) throw new Error(`the host exited with ${proc.exitCode}:\n${out.join('\n')}`);
      if (Date.now() > until) throw new Error(`the host did not serve within 120 s:\n${out.join('\n')}`);
    }
    const key = out.map((l) => /^\s+(owk_\S+)$/.exec(l)?.[1]).find(Boolean) ?? '';
    expect(key).toMatch(/^owk_/);

    // Warm: the key verified and the chain resolved once, and every socket of the agent open.
    const warm = await Promise.all(Array.from({ length: 16 }, (_, i) => post(base, key, -1 - i)));
    expect(warm.map((a) => a.status)).toEqual(Array(16).fill(201));

    const ids: string[] = [];
    for (let burst = 0; burst < 3; burst++) {
      const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => post(base, key, burst * 16 + i)));
      expect(answers.map((a) => a.status)).toEqual(Array(16).fill(201));
      ids.push(...answers.map((a) => a.runId));
    }
    expect(new Set(ids).size).toBe(48);

    const db = new Client({ host: dataDir, user: 'postgres', database: 'postgres' });
    await db.connect();
    try {
      const { rows } = await db.query<{ id: string; status: string; created: string; i: number }>(
        `SELECT "id", "status", "created_at"::text AS "created", ("inputs"->>'i')::int AS "i" FROM "run" WHERE "id" = ANY($1::uuid[])`,
        [ids],
      );
      expect(rows).toHaveLength(48);
      // Each answer is its own request's run, inserted completed (its one core.noop ran before the insert).
      for (const r of rows) expect(r.i).toBe(ids.indexOf(r.id));
      expect(rows.every((r) => r.status === 'completed')).toBe(true);
      // Fewer transactions than runs: creates read in one turn were written by one statement (each
      // insert leaving at once gave 48 times of their own for the 48 runs; gathered, 6).
      expect(new Set(rows.map((r) => r.created)).size).toBeLessThanOrEqual(24);
    } finally {
      await db.end();
    }
  }, 180_000);
});
