import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { EmbeddedEngine, EmbeddedThread, prepareEmbeddedEngine, PreparedEngine } from './embedded-engine';
import { EmbeddedWireServer, WireServerLog } from './embedded-wire-server';

/**
 * The zero-setup default: PostgreSQL compiled to WebAssembly (PGlite), persisted under the data
 * folder and served over the ordinary Postgres wire protocol on a unix socket inside that folder.
 * The host and the CLI both talk to it with the same `pg` driver and migrations as production.
 *
 * It is single-process by nature. A lock file names the process that owns the folder (its pid and
 * start time, so a pid reused after a crash is not mistaken for the owner). A host (`serve`) must own
 * the folder: it waits for a previous owner to exit and takes the folder over, or gives up with one
 * line after `waitMs`. A one-shot command (the CLI) joins a live owner through its socket instead.
 * A lock left by a dead process and its socket file are recovered.
 */
export interface EmbeddedPostgres {
  /** Folder holding the socket (`.s.PGSQL.5432`), usable as the `host` of a pg connection. */
  socketDir: string;
  port: number;
  /** True when this process owns the folder (false: joined another process through its socket). */
  owner: boolean;
  /** The wire server of an owner (queue statistics). */
  server?: EmbeddedWireServer;
  close(): Promise<void>;
}

export interface EmbeddedLog extends WireServerLog {
  info(line: { msg: string } & Record<string, unknown>): void;
}

export interface EmbeddedOptions {
  /** Join a live owner through its socket instead of waiting for the folder (one-shot commands). */
  join?: boolean;
  /** How long to wait for another process to release the folder (default 30 s). */
  waitMs?: number;
  /** Connections the socket accepts at once. */
  maxConnections?: number;
  /** PostgreSQL settings (`-c name=value`) over the memory-tuned defaults. */
  settings?: Record<string, string>;
  /** Where the engine runs (embedded-engine.ts; default the host's own thread). */
  thread?: EmbeddedThread;
  idleInTransactionTimeoutMs?: number;
  log?: EmbeddedLog;
}

/** A second process wants a folder another live process owns, and waited long enough. */
export class EmbeddedBusyError extends Error {
  constructor(
    readonly dataDir: string,
    readonly ownerPid: number,
  ) {
    super(`the embedded database in ${dataDir} is in use by process ${ownerPid} (another openwop-host?); stop it, use another OPENWOP_DATA_DIR, or set DATABASE_URL`);
    this.name = 'EmbeddedBusyError';
  }
}

const SOCKET_NAME = '.s.PGSQL.5432';

/**
 * PostgreSQL's defaults size a server for a machine (160 MB of shared buffers and more); one embedded
 * session over a small database needs far less, and every buffer is resident memory of the host: the
 * engine's WebAssembly memory never shrinks, so what the buffers and the backend touch under load
 * stays resident after it. The buffers are also zeroed at every start. 16 MB against 32 MB: RSS idle
 * 349 against 384 MB, peak under the 16-client burst 385 against 423 MB, boot CPU 6.2 against 8.0 s,
 * submission rate within noise (`npm run bench -- embedded`, docs/benchmarks.md). Pages past the
 * buffers are read back from the data folder through the operating system's file cache.
 */
export const EMBEDDED_PG_DEFAULTS: Readonly<Record<string, string>> = {
  shared_buffers: '16MB',
  wal_buffers: '1MB',
  temp_buffers: '4MB',
  work_mem: '4MB',
  maintenance_work_mem: '32MB',
  max_wal_size: '256MB',
  min_wal_size: '32MB',
};

export function embeddedPaths(dataDir: string) {
  return {
    pgData: path.join(dataDir, 'pg'),
    socketDir: dataDir,
    socket: path.join(dataDir, SOCKET_NAME),
    lock: path.join(dataDir, 'embedded.lock'),
  };
}

interface LockOwner {
  pid: number;
  /** /proc start time of the process (clock ticks since boot), where the platform has it. */
  start?: string;
  host?: string;
}

function processStart(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function parseLock(text: string): LockOwner | undefined {
  const t = text.trim();
  if (/^\d+$/.test(t)) return { pid: Number(t) };
  try {
    const v = JSON.parse(t) as LockOwner;
    return typeof v.pid === 'number' ? v : undefined;
  } catch {
    return undefined;
  }
}

function readLock(file: string): { text: string; owner?: LockOwner } | undefined {
  try {
    const text = fs.readFileSync(file, 'utf8');
    return { text, owner: parseLock(text) };
  } catch {
    return undefined;
  }
}

/** The process the lock names is running (and is the same process, not a reuse of its pid). */
function ownerAlive(o: LockOwner | undefined): boolean {
  // The host name is kept for diagnostics only: a container recreated on the same volume has a new
  // one, and its predecessor's lock must still be recognised as stale.
  if (!o || !o.pid || o.pid === process.pid) return false;
  if (!pidAlive(o.pid)) return false;
  if (o.start) {
    const now = processStart(o.pid);
    if (now !== undefined && now !== o.start) return false;
  }
  return true;
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

/**
 * Claims the folder's lock: created exclusively; a stale one (dead owner) is moved aside atomically
 * first, and put back if what was moved turns out to be another process's fresh claim.
 */
function tryClaim(lock: string, log?: EmbeddedLog): { claimed: true } | { claimed: false; owner: LockOwner } {
  const mine = JSON.stringify({ pid: process.pid, start: processStart(process.pid), host: os.hostname() } satisfies LockOwner);
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      fs.writeFileSync(lock, mine, { flag: 'wx' });
      return { claimed: true };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const held = readLock(lock);
    if (!held) continue; // removed meanwhile: try again
    const owner = held.owner;
    if (owner && ownerAlive(owner)) return { claimed: false, owner };
    const aside = `${lock}.stale-${process.pid}-${attempt}`;
    try {
      fs.renameSync(lock, aside);
    } catch {
      continue; // someone else moved it first
    }
    const moved = readLock(aside);
    if (moved?.text !== held.text) {
      // A fresh claim slipped in between: give it back.
      try {
        fs.linkSync(aside, lock);
      } catch {
        /* a third claim exists: it stands */
      }
      fs.rmSync(aside, { force: true });
      continue;
    }
    fs.rmSync(aside, { force: true });
    log?.warn({ msg: 'embedded database: recovered the lock of a process that is gone', stalePid: owner?.pid });
  }
  // Contended: the caller tries again shortly.
  return { claimed: false, owner: readLock(lock)?.owner ?? { pid: 0 } };
}

/** When another live process owns the embedded database and serves it, the socket to reach it. */
export async function findRunningEmbedded(dataDir: string): Promise<EmbeddedPostgres | undefined> {
  const p = embeddedPaths(dataDir);
  if (!ownerAlive(readLock(p.lock)?.owner)) return undefined;
  if (!(await socketAnswers(p.socket))) return undefined;
  return { socketDir: p.socketDir, port: 5432, owner: false, close: async () => undefined };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A new data folder is initialised (initdb) in a short-lived child process: initdb's WebAssembly
 * instance and its memory would otherwise stay resident in the host for its whole life (~500 MB).
 * It is built beside the final folder and renamed into place, so an interrupted first start leaves
 * no half-made database behind.
 */
async function initDataFolder(pgData: string, log?: EmbeddedLog): Promise<void> {
  if (fs.existsSync(path.join(pgData, 'PG_VERSION'))) return;
  const staging = `${pgData}.init-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  log?.info({ msg: 'embedded database: creating a new database (first start)', folder: pgData });
  const entry = require.resolve('@electric-sql/pglite');
  const script = `const { PGlite } = require(${JSON.stringify(entry)});
PGlite.create({ dataDir: ${JSON.stringify(staging)} }).then((db) => db.close()).then(() => process.exit(0), (e) => { process.stderr.write(String((e && e.message) || e)); process.exit(1); });`;
  await new Promise<void>((resolve, reject) => {
    execFile(process.execPath, ['-e', script], { timeout: 300_000, maxBuffer: 4 * 1024 * 1024 }, (err, _out, stderr) => {
      if (err) reject(new Error(`initialising the embedded database failed: ${(stderr || err.message).trim().split('\n').pop()}`));
      else resolve();
    });
  });
  // Empty leftovers of an older start (the folder itself) give way to the new database.
  if (fs.existsSync(pgData) && fs.readdirSync(pgData).length === 0) fs.rmdirSync(pgData);
  fs.renameSync(staging, pgData);
}

export async function startEmbeddedPostgres(dataDir: string, options: EmbeddedOptions = {}): Promise<EmbeddedPostgres> {
  const p = embeddedPaths(dataDir);
  const log = options.log;
  fs.mkdirSync(dataDir, { recursive: true });
  const waitMs = options.waitMs ?? 30_000;
  const deadline = Date.now() + waitMs;
  // The engine is made ready (PGlite loaded, its WebAssembly compiled) while the folder is waited for.
  // PGlite is loaded there: a host on DATABASE_URL never pays for the WebAssembly engine.
  let prepared: PreparedEngine | undefined = options.join ? undefined : prepareEmbeddedEngine(options.thread ?? 'main');
  let told = false;
  for (;;) {
    if (options.join) {
      const running = await findRunningEmbedded(dataDir);
      if (running) {
        log?.info({ msg: 'embedded database is served by another process; connecting through its socket', socket: p.socket });
        return running;
      }
    }
    const claim = tryClaim(p.lock, log);
    if (claim.claimed) break;
    if (Date.now() >= deadline) {
      await prepared?.discard();
      throw new EmbeddedBusyError(dataDir, claim.owner.pid);
    }
    if (!told) {
      told = true;
      log?.warn({ msg: options.join ? 'embedded database: waiting for its owner to serve it' : 'embedded database: waiting for the process that holds the data folder to exit', ownerPid: claim.owner.pid, waitMs });
    }
    await sleep(200);
  }
  const releaseLock = () => {
    try {
      if (readLock(p.lock)?.owner?.pid === process.pid) fs.rmSync(p.lock, { force: true });
    } catch {
      /* already gone */
    }
  };
  // Whatever way the process ends from here, the folder is not left claimed by it.
  const onExit = () => {
    fs.rmSync(p.socket, { force: true });
    releaseLock();
  };
  process.once('exit', onExit);
  let db: EmbeddedEngine | undefined;
  try {
    // We own the folder: a socket file left there is a dead owner's.
    fs.rmSync(p.socket, { force: true });
    await initDataFolder(p.pgData, log);
    const settings = { ...EMBEDDED_PG_DEFAULTS, ...(options.settings ?? {}) };
    log?.info({ msg: 'starting embedded PostgreSQL', folder: p.pgData, thread: options.thread ?? 'main' });
    prepared ??= prepareEmbeddedEngine(options.thread ?? 'main');
    db = prepared.open(p.pgData, settings);
    prepared = undefined;
    await db.ready;
    const server = new EmbeddedWireServer(db, {
      listen: p.socket,
      maxConnections: options.maxConnections,
      idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs,
      log,
    });
    await server.start();
    let closed = false;
    const started = db;
    return {
      socketDir: p.socketDir,
      port: 5432,
      owner: true,
      server,
      async close() {
        if (closed) return;
        closed = true;
        await server.stop().catch(() => undefined);
        await started.close().catch(() => undefined);
        fs.rmSync(p.socket, { force: true });
        releaseLock();
        process.off('exit', onExit);
      },
    };
  } catch (e) {
    await db?.close().catch(() => undefined);
    await prepared?.discard().catch(() => undefined);
    onExit();
    process.off('exit', onExit);
    throw e;
  }
}
