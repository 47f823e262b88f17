import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import type { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/**
 * The zero-setup default: PostgreSQL compiled to WebAssembly (PGlite), persisted under the data
 * folder and served over the ordinary Postgres wire protocol on a unix socket inside that folder.
 * The host and the CLI both talk to it with the same `pg` driver and migrations as production.
 * It is single-process by nature: a lock file names the process that owns it, and other processes
 * (the CLI while the host runs) connect through the socket instead of opening the files.
 */
export interface EmbeddedPostgres {
  /** Folder holding the socket (`.s.PGSQL.5432`), usable as the `host` of a pg connection. */
  socketDir: string;
  port: number;
  close(): Promise<void>;
}

const SOCKET_NAME = '.s.PGSQL.5432';

export function embeddedPaths(dataDir: string) {
  return {
    pgData: path.join(dataDir, 'pg'),
    socketDir: dataDir,
    socket: path.join(dataDir, SOCKET_NAME),
    lock: path.join(dataDir, 'embedded.lock'),
  };
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function socketAnswers(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.createConnection(socket);
    const done = (ok: boolean) => {
      c.destroy();
      resolve(ok);
    };
    c.once('connect', () => done(true));
    c.once('error', () => done(false));
    setTimeout(() => done(false), 1000).unref();
  });
}

/** When another live process owns the embedded database, the socket to reach it. */
export async function findRunningEmbedded(dataDir: string): Promise<EmbeddedPostgres | undefined> {
  const p = embeddedPaths(dataDir);
  if (!fs.existsSync(p.lock)) return undefined;
  const pid = Number(fs.readFileSync(p.lock, 'utf8').trim());
  if (!pid || pid === process.pid || !pidAlive(pid)) return undefined;
  if (!(await socketAnswers(p.socket))) return undefined;
  return { socketDir: p.socketDir, port: 5432, close: async () => undefined };
}

export async function startEmbeddedPostgres(
  dataDir: string,
  options: { maxConnections?: number; log?: (msg: string) => void } = {},
): Promise<EmbeddedPostgres> {
  const running = await findRunningEmbedded(dataDir);
  if (running) {
    options.log?.(`embedded database is served by another process; connecting through ${embeddedPaths(dataDir).socket}`);
    return running;
  }
  const p = embeddedPaths(dataDir);
  fs.mkdirSync(p.pgData, { recursive: true });
  // Claim the folder. `wx` fails if another process created the lock first; a stale lock (dead pid) is replaced.
  try {
    fs.writeFileSync(p.lock, String(process.pid), { flag: 'wx' });
  } catch {
    const pid = Number(fs.readFileSync(p.lock, 'utf8').trim());
    if (pid && pid !== process.pid && pidAlive(pid)) {
      throw new Error(`the embedded database in ${dataDir} is owned by process ${pid}, which is not answering on its socket`);
    }
    fs.writeFileSync(p.lock, String(process.pid));
  }
  if (fs.existsSync(p.socket)) fs.rmSync(p.socket, { force: true });
  // Loaded lazily: a host on DATABASE_URL never pays for the WebAssembly engine.
  const { PGlite: PGliteCtor } = require('@electric-sql/pglite') as { PGlite: typeof PGlite };
  const { PGLiteSocketServer: ServerCtor } = require('@electric-sql/pglite-socket') as {
    PGLiteSocketServer: typeof PGLiteSocketServer;
  };
  options.log?.(`starting embedded PostgreSQL in ${p.pgData}`);
  const db = await PGliteCtor.create({ dataDir: p.pgData });
  const maxConnections = options.maxConnections ?? 8;
  const server = new ServerCtor({ db, path: p.socket, maxConnections });
  await server.start();
  let closed = false;
  return {
    socketDir: p.socketDir,
    port: 5432,
    async close() {
      if (closed) return;
      closed = true;
      await server.stop().catch(() => undefined);
      await db.close().catch(() => undefined);
      fs.rmSync(p.socket, { force: true });
      try {
        if (Number(fs.readFileSync(p.lock, 'utf8').trim()) === process.pid) fs.rmSync(p.lock, { force: true });
      } catch {
        /* already gone */
      }
    },
  };
}
