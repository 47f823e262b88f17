/**
 * `openwop-host serve` with the gRPC transport: the listener starts after HTTP, is advertised, and
 * stops with the process on SIGTERM; a port that cannot be bound or a broken TLS setting stops the
 * start with one line.
 */
import { ChildProcess, execFile, spawn } from 'node:child_process';
import * as net from 'node:net';
import * as path from 'node:path';
import { createScratchDatabase } from '../support/scratch-db';
import { Engine, eventually } from './grpc-kit';
import { tempDirs } from '../support/temp-dirs';

const BIN = path.join(__dirname, '../../bin/openwop-host.js');

const temp = tempDirs();

function env(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, LOG_LEVEL: 'info', OPENWOP_SCHEDULER_ENABLED: 'false', OPENWOP_BOOTSTRAP_KEY: 'false', HOST: '127.0.0.1', PORT: '0', OPENWOP_DATA_DIR: temp.make('openwop-grpc-serve-'), ...extra };
}

function failedStart(extra: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, 'serve'], { env: env(extra), timeout: 60_000, killSignal: 'SIGKILL' }, (err, _stdout, stderr) => {
      const e = err as (Error & { code?: number | string }) | null;
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, stderr });
    });
  });
}

function oneLine(stderr: string): string {
  const lines = stderr.split('\n').filter((l) => l.trim());
  expect(lines).toHaveLength(1);
  return lines[0];
}

describe('serve with the gRPC transport', () => {
  it('listens after HTTP, advertises itself, and stops with the process on SIGTERM', async () => {
    const db = await createScratchDatabase();
    let child: ChildProcess | undefined;
    try {
      child = spawn(process.execPath, [BIN, 'serve'], { env: env({ DATABASE_URL: db.url, OPENWOP_GRPC_PORT: '0', OPENWOP_GRPC_HOST: '127.0.0.1' }), stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout!.on('data', (c) => (out += String(c)));
      child.stderr!.on('data', (c) => (out += String(c)));
      const lines = () => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
      const http = await eventually('the HTTP listener', () => lines().find((l) => l.msg === 'openwop host listening'), 60_000);
      const g = await eventually('the gRPC listener', () => lines().find((l) => l.msg === 'openwop gRPC transport listening'), 30_000);
      expect(g).toMatchObject({ tls: 'disabled', reflection: false, endpoint: expect.stringMatching(/^grpc:\/\/127\.0\.0\.1:\d+$/) });
      const target = g.endpoint.replace('grpc://', '');
      const engine = new Engine(target);
      const caps = await engine.call('GetCapabilities', {});
      const rest = (await (await fetch(`${http.url}/.well-known/openwop`)).json()) as { grpc?: unknown };
      expect(caps.ok && caps.body).toEqual(rest);
      expect(rest.grpc).toEqual({ supported: true, endpoint: g.endpoint, service: 'openwop.v1.Engine', tls: 'disabled' });
      engine.close();

      const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      const port = Number(target.split(':')[1]);
      const refused = await new Promise<boolean>((resolve) => {
        const s = net.connect(port, '127.0.0.1');
        s.once('connect', () => {
          s.destroy();
          resolve(false);
        });
        s.once('error', () => resolve(true));
      });
      expect(refused).toBe(true);
    } finally {
      if (child && child.exitCode === null) child.kill('SIGKILL');
      await db.drop();
    }
  }, 120_000);

  it('a gRPC port that is taken stops the start with one line', async () => {
    const db = await createScratchDatabase();
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const res = await failedStart({ DATABASE_URL: db.url, OPENWOP_GRPC_PORT: String(port), OPENWOP_GRPC_HOST: '127.0.0.1' });
      expect(res.code).toBe(1);
      expect(oneLine(res.stderr)).toBe(`openwop-host cannot start (listen): cannot listen for gRPC on 127.0.0.1:${port}: the address is already in use`);
    } finally {
      blocker.close();
      await db.drop();
    }
  }, 90_000);

  it('a TLS setting that cannot work stops the start with one line, before the database is opened', async () => {
    const res = await failedStart({ DATABASE_URL: 'postgres://127.0.0.1:1/never-opened', OPENWOP_GRPC_PORT: '0', OPENWOP_GRPC_TLS: 'required' });
    expect(res.code).toBe(1);
    expect(oneLine(res.stderr)).toBe('configuration error: OPENWOP_GRPC_TLS=required needs OPENWOP_GRPC_TLS_CERT and OPENWOP_GRPC_TLS_KEY (PEM files)');
  }, 60_000);
});
