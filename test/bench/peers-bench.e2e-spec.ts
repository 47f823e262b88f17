import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Client } from 'pg';
import { tempDirs } from '../support/temp-dirs';

/**
 * The peer benchmark (`npm run bench -- peers`, and its process mode `npm run bench -- peers-process`)
 * in its shortest mode, so it keeps working as the
 * host, graphile-worker and pg-boss change: every side must finish work in every shape it takes part
 * in, and every figure the README quotes must come out. The figures themselves are not judged here
 * (sub-second windows on a busy machine mean nothing).
 */
const temp = tempDirs();

const root = path.join(__dirname, '..', '..');

interface Figures {
  shape: string;
  side: string;
  items: number;
  rate: number;
  p50Ms?: number;
  p99Ms?: number;
  pgCpuMs?: number;
  statements: number;
  submitStatements?: number;
}

function runBench(args: string[], bench = 'peers'): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(root, 'bin', 'bench.js'), bench, ...args], { cwd: root, env: { ...process.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('npm run bench -- peers', () => {
  if (process.env.OPENWOP_TEST_DB_MODE === 'embedded') {
    it('refuses the embedded engine: the peers need a PostgreSQL server with databases and backends of their own', async () => {
      const r = await runBench(['--short']);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('needs a PostgreSQL server');
    }, 60_000);
    it('refuses it in process mode too', async () => {
      const r = await runBench(['--short'], 'peers-process');
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('needs a PostgreSQL server');
    }, 60_000);
    return;
  }

  it('measures every side in every shape, short mode', async () => {
    const out = path.join(temp.make('openwop-peers-'), 'peers.json');
    // Eight workers a side, not sixteen: other test files hold connections of the same server meanwhile.
    const r = await runBench(['--short', '--concurrency', '8', '--json', out]);
    if (r.code !== 0) throw new Error(`bench exited ${r.code}\n${r.stderr}`);
    const result = JSON.parse(fs.readFileSync(out, 'utf8')) as { figures: Figures[]; summary: Array<{ figure: string; median: number; target?: string }>; versions: string[] };
    expect(result.versions).toEqual(['graphile-worker 0.17.3', 'pg-boss 10.4.2']);

    const expected: Record<string, string[]> = {
      host: ['backlog-1', 'backlog-3', 'submit', 'latency-1', 'latency-3'],
      'graphile-worker': ['backlog-1', 'backlog-3', 'submit', 'latency-1', 'latency-3'],
      'graphile-worker batched': ['backlog-1', 'backlog-3'],
      'pg-boss': ['backlog-1', 'backlog-3', 'submit', 'latency-1', 'latency-3'],
    };
    const problems: string[] = [];
    for (const [side, shapes] of Object.entries(expected)) {
      for (const shape of shapes) {
        const f = result.figures.find((x) => x.side === side && x.shape === shape);
        if (!f) problems.push(`${side} ${shape}: missing`);
        else if (!(f.items > 0)) problems.push(`${side} ${shape}: no item finished in the window`);
        // Every side reaches PostgreSQL through the counted driver.
        else if (!(f.statements > 0)) problems.push(`${side} ${shape}: no statement counted`);
        else if (shape.startsWith('latency') && !(f.p99Ms! >= f.p50Ms! && f.p50Ms! > 0)) problems.push(`${side} ${shape}: p50 ${f.p50Ms} p99 ${f.p99Ms}`);
      }
    }
    expect(problems).toEqual([]);
    // The host's statements are told apart: a POST sends its own (one insert that also claims the run,
    // or carries the first write of a run started before it: at most two round trips; concurrent POSTs
    // share an insert statement, so fewer than one each under load), and execution the rest (none more
    // for a run inserted completed).
    const submit = result.figures.find((x) => x.side === 'host' && x.shape === 'submit')!;
    expect(submit.submitStatements).toBeGreaterThan(0);
    expect(submit.submitStatements).toBeLessThanOrEqual(2);
    expect(submit.statements).toBeGreaterThanOrEqual(submit.submitStatements!);
    expect(result.figures.find((x) => x.side === 'graphile-worker' && x.shape === 'submit')!.submitStatements).toBeCloseTo(1, 5);

    // PostgreSQL CPU comes from /proc, so only when the server runs on this machine.
    const c = new Client({ connectionString: process.env.DATABASE_URL });
    await c.connect();
    const pid = (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    await c.end();
    if (fs.existsSync(`/proc/${pid}/stat`)) expect(result.figures.find((x) => x.side === 'host' && x.shape === 'backlog-1')!.pgCpuMs).toBeGreaterThan(0);

    // Every acceptance ratio is printed and computed.
    const targets = result.summary.filter((l) => l.target);
    expect(targets.map((l) => l.figure)).toHaveLength(7);
    for (const l of targets) expect(Number.isFinite(l.median)).toBe(true);
    expect(r.stdout).toContain('same-round ratios');
  }, 120_000);

  // The process mode (`npm run bench -- peers-process`): a fresh `openwop-host serve` and a fresh
  // graphile-worker worker per round, their clients in processes of their own.
  it('measures both sides through processes of their own, short mode', async () => {
    const out = path.join(temp.make('openwop-peers-process-'), 'peers.json');
    const r = await runBench(['--short', '--concurrency', '8', '--json', out], 'peers-process');
    if (r.code !== 0) throw new Error(`bench exited ${r.code}\n${r.stderr}`);
    const result = JSON.parse(fs.readFileSync(out, 'utf8')) as {
      figures: Array<Figures & { phase: string; serviceCpuMs: number; firstMs?: number }>;
      summary: Array<{ figure: string; median: number; target?: string }>;
      versions: string[];
    };
    expect(result.versions).toEqual(['graphile-worker 0.17.3']);
    const problems: string[] = [];
    for (const side of ['host', 'graphile-worker']) {
      for (const phase of ['submit', 'latency']) {
        const f = result.figures.find((x) => x.side === side && x.phase === phase);
        if (!f) problems.push(`${side} ${phase}: missing`);
        // Every submission answered (the host's a 201), every idle item observed complete.
        else if (f.items !== (phase === 'submit' ? 200 : 20)) problems.push(`${side} ${phase}: ${f.items} items`);
        else if (!(f.p99Ms! >= f.p50Ms! && f.p50Ms! > 0)) problems.push(`${side} ${phase}: p50 ${f.p50Ms} p99 ${f.p99Ms}`);
        // The service's CPU is read from its own process: it did the work, not the client.
        else if (!(f.serviceCpuMs > 0)) problems.push(`${side} ${phase}: no CPU of the service process`);
        else if (phase === 'latency' && !(f.firstMs! > 0)) problems.push(`${side} ${phase}: no first item`);
      }
    }
    expect(problems).toEqual([]);
    const targets = result.summary.filter((l) => l.target);
    expect(targets.map((l) => l.figure)).toEqual([
      'submission, per s: host / graphile-worker',
      'idle latency 1 step, p50: host / graphile-worker',
      'idle latency 1 step, p99: host / graphile-worker',
    ]);
    for (const l of targets) expect(Number.isFinite(l.median)).toBe(true);
  }, 120_000);
});
