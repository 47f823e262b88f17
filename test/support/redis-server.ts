import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as net from 'node:net';

/** The machine's Redis server the shared-store tests use (.ci/run starts it when it is not answering). */
export const MACHINE_REDIS = { host: '127.0.0.1', port: 6379, url: 'redis://127.0.0.1:6379' };

/**
 * Why a Redis server cannot be used at host:port, or undefined when it answers PING. Synchronous (a
 * child process), so a test file decides before its tests are collected whether to skip them.
 */
export function redisSkipReason(host = MACHINE_REDIS.host, port = MACHINE_REDIS.port): string | undefined {
  const probe = `
    const s = require('node:net').createConnection({ host: ${JSON.stringify(host)}, port: ${port} });
    let out = '';
    const done = (msg) => { process.stdout.write(msg); s.destroy(); process.exit(0); };
    s.setTimeout(1500, () => done('timeout'));
    s.on('connect', () => s.write('PING\\r\\n'));
    s.on('data', (d) => { out += d; if (out.includes('\\r\\n')) done(out.trim()); });
    s.on('error', (e) => done(e.code || e.message));`;
  const r = spawnSync(process.execPath, ['-e', probe], { encoding: 'utf8', timeout: 5000 });
  const answer = (r.stdout ?? '').trim();
  if (answer === '+PONG') return undefined;
  return `no Redis server answers PING on ${host}:${port} (${answer || r.error?.message || 'no answer'}); install and start Debian's redis-server (.ci/run does)`;
}

/** Why no private Redis server can be started here (the redis-server program is missing), or undefined. */
export function redisServerSkipReason(): string | undefined {
  const r = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? undefined : 'the redis-server program is not installed (Debian package redis-server; .ci/run installs it)';
}

/** A port nothing listens on now (the kernel picked it free; closed again at once). */
export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

export interface PrivateRedis {
  port: number;
  url: string;
  /** Stops the server (SIGKILL: as abrupt as a crash) and waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts a Redis server of the test's own on a free port, keeping nothing on disk, and waits until it answers. */
export async function startPrivateRedis(extraArgs: string[] = []): Promise<PrivateRedis> {
  const port = await freePort();
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extraArgs], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  for (let i = 0; i < 100 && redisSkipReason('127.0.0.1', port) !== undefined; i++) await new Promise((r) => setTimeout(r, 50));
  if (redisSkipReason('127.0.0.1', port) !== undefined) {
    child.kill('SIGKILL');
    throw new Error(`the private redis-server on port ${port} did not answer`);
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
