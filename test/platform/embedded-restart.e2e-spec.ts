/**
 * Restarts on one embedded data folder, with the real `openwop-host serve`: a second host while the
 * first runs waits for the folder and gives up with one line; a host started right after SIGTERM to
 * the previous one takes the folder over and serves within 15 s; after kill -9 the next host recovers
 * the dead process's lock and socket. Never a host half-connected to a dying process's socket.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const BIN = path.join(__dirname, '../../bin/openwop-host.js');

interface Serve {
  proc: ChildProcess;
  out: string[];
  started: number;
  exit: Promise<number | null>;
}

describe('embedded database: restart and takeover of the data folder', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-restart-'));
  const lock = path.join(dataDir, 'embedded.lock');
  const socket = path.join(dataDir, '.s.PGSQL.5432');
  const env: NodeJS.ProcessEnv = { ...process.env, OPENWOP_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info', OPENWOP_SCHEDULER_TICK_MS: '60000', OPENWOP_CONSOLE: 'false' };
  delete env.DATABASE_URL;
  const procs: ChildProcess[] = [];
  let key = '';

  const serve = (extra: Record<string, string> = {}): Serve => {
    const proc = spawn(process.execPath, [BIN, 'serve'], { env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
    procs.push(proc);
    const out: string[] = [];
    proc.stdout!.on('data', (d) => out.push(...String(d).split('\n').filter(Boolean)));
    proc.stderr!.on('data', (d) => out.push(...String(d).split('\n').filter(Boolean)));
    const exit = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    return { proc, out, started: Date.now(), exit };
  };

  /** The base URL once /readyz answers 200 (ms after the process was spawned). */
  const ready = async (s: Serve, timeoutMs: number): Promise<{ base: string; ms: number }> => {
    const until = s.started + timeoutMs;
    for (;;) {
      const base = s.out.map((l) => /"url":"(http:\/\/[^"]+)"/.exec(l)?.[1]).find(Boolean);
      if (base) {
        const r = await fetch(`${base}/readyz`).catch(() => undefined);
        if (r?.status === 200) return { base, ms: Date.now() - s.started };
      }
      if (s.proc.exitCode !== null) throw new Error(`the host exited with ${s.proc.exitCode}:\n${s.out.join('\n')}`);
      if (Date.now() > until) throw new Error(`the host did not serve within ${timeoutMs} ms:\n${s.out.join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  const lockPid = () => Number((JSON.parse(fs.readFileSync(lock, 'utf8')) as { pid: number }).pid);

  const keyWorks = async (base: string) => (await fetch(`${base}/v1/runs/host/events/poll`, { headers: { authorization: `Bearer ${key}` } })).status;

  afterAll(async () => {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  let first: Serve;
  let firstBase = '';

  it('a second host on a folder in use waits for it, then gives up with one line and exit 1', async () => {
    first = serve();
    firstBase = (await ready(first, 150_000)).base;
    key = first.out.map((l) => /^\s+(owk_\S+)$/.exec(l)?.[1]).find(Boolean) ?? '';
    expect(key).toMatch(/^owk_/);
    expect(lockPid()).toBe(first.proc.pid);

    const second = serve({ OPENWOP_EMBEDDED_WAIT_MS: '1500' });
    expect(await second.exit).toBe(1);
    const plain = second.out.filter((l) => !l.startsWith('{'));
    expect(plain).toEqual([expect.stringContaining(`the embedded database in ${dataDir} is in use by process ${first.proc.pid}`)]);
    expect(second.out.some((l) => l.includes('waiting for the process that holds the data folder to exit'))).toBe(true);
    // The first host never noticed.
    expect(await keyWorks(firstBase)).toBe(200);
    expect(lockPid()).toBe(first.proc.pid);
  }, 240_000);

  it('a host started right after SIGTERM to the previous one takes the folder over and serves within 15 s', async () => {
    first.proc.kill('SIGTERM');
    let exitedAt = 0;
    void first.exit.then(() => (exitedAt = Date.now()));
    const next = serve();
    const { base, ms } = await ready(next, 60_000);
    expect(await first.exit).toBe(0);
    const afterExit = Date.now() - exitedAt;
    if (process.env.OPENWOP_TEST_REPORT) console.log(JSON.stringify({ takeover: { servedAfterSigtermMs: ms, servedAfterPreviousExitMs: afterExit } }));
    // 15 s from SIGTERM on a machine that is not overloaded; the bound that holds under any load is
    // the part that is this host's own: serving within 15 s of the previous one's exit.
    expect(afterExit).toBeLessThanOrEqual(15_000);
    expect(ms).toBeLessThanOrEqual(30_000);
    // It owns the folder (not a client of the previous process's socket) and has its data.
    expect(lockPid()).toBe(next.proc.pid);
    expect(await keyWorks(base)).toBe(200);
    expect(next.out.some((l) => l.includes('connecting through its socket'))).toBe(false);

    // kill -9: the lock names a dead process and its socket file stays behind.
    next.proc.kill('SIGKILL');
    await next.exit;
    expect(fs.existsSync(lock)).toBe(true);
    expect(fs.existsSync(socket)).toBe(true);
    const after = serve();
    const recovered = await ready(after, 60_000);
    expect(lockPid()).toBe(after.proc.pid);
    expect(after.out.some((l) => l.includes('recovered the lock of a process that is gone'))).toBe(true);
    expect(await keyWorks(recovered.base)).toBe(200);
    after.proc.kill('SIGTERM');
    expect(await after.exit).toBe(0);
    // A clean stop leaves neither lock nor socket.
    expect(fs.existsSync(lock)).toBe(false);
    expect(fs.existsSync(socket)).toBe(false);
  }, 240_000);
});
