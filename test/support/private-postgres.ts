import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A PostgreSQL cluster of a test's own, in a temporary folder on a free port, to stop, kill or
 * freeze without touching the shared test server. Uses Debian's server binaries
 * (/usr/lib/postgresql/<version>/bin; .ci/run installs the `postgresql` package when they are
 * missing). As root, the cluster runs as the `postgres` user (initdb refuses root).
 */
export interface PrivatePostgres {
  url: string;
  port: number;
  /** Stops the server at once (`pg_ctl stop -m immediate`: backends are killed, as in a crash). */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP (true) or SIGCONT (false) to the postmaster and every backend: a hung server. */
  freeze(frozen: boolean): void;
  destroy(): Promise<void>;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb'))) : [];
  if (!versions.length) throw new Error('PostgreSQL server binaries are missing (/usr/lib/postgresql/<version>/bin): apt-get install postgresql');
  versions.sort((a, b) => Number(b) - Number(a));
  return path.join(root, versions[0], 'bin');
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = binDir();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-private-pg-'));
  const data = path.join(root, 'data');
  const asRoot = process.getuid?.() === 0;
  const exec = async (cmd: string, args: string[]) => {
    const file = path.join(bin, cmd);
    return asRoot ? run('runuser', ['-u', 'postgres', '--', file, ...args], { timeout: 60_000 }) : run(file, args, { timeout: 60_000 });
  };
  if (asRoot) fs.chownSync(root, Number((await run('id', ['-u', 'postgres'])).stdout.trim()), Number((await run('id', ['-g', 'postgres'])).stdout.trim()));
  await exec('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60`;
  const start = async () => {
    await exec('pg_ctl', ['-D', data, '-o', options, '-l', path.join(root, 'server.log'), '-w', '-t', '60', 'start']);
  };
  const pids = (): number[] => {
    const master = Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = fs
      .readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
          return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === master;
        } catch {
          return false;
        }
      })
      .map(Number);
    return [master, ...children];
  };
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    async stop() {
      await exec('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    },
    freeze(frozen: boolean) {
      for (const pid of pids()) {
        try {
          process.kill(pid, frozen ? 'SIGSTOP' : 'SIGCONT');
        } catch {
          /* exited meanwhile */
        }
      }
    },
    async destroy() {
      try {
        for (const pid of pids()) process.kill(pid, 'SIGCONT');
      } catch {
        /* not running */
      }
      await exec('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
