import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { PGlite, PGliteOptions } from '@electric-sql/pglite';
import { InternalFault, InvariantViolation } from '../errors/internal-fault';
import { PROJECT_ROOT } from '../project-root';

/**
 * The embedded PostgreSQL backend (PGlite) as the wire server uses it: protocol bytes in, the
 * backend's answer out, one message group at a time.
 *
 * By default it runs on the host's own thread (`thread: 'main'`): a statement runs when it is sent
 * and its answer reaches the waiting code without a turn of the event loop, so a transaction holds
 * the one backend only as long as its own statements take. `thread: 'worker'` runs it on a worker
 * thread of the host process: its start (unpacking its files, compiling its WebAssembly, starting
 * the backend, about a second of CPU) then runs while the host's modules load, which shortens a
 * boot where a core is idle; but every answer then waits for a turn of the host's event loop, and
 * the backend idles meanwhile, so under load fewer runs per second get through (measured in
 * docs/benchmarks.md), and the thread's own heap costs about 40 MB.
 */
export interface EmbeddedEngine {
  /** Settles once the backend started (rejects with why it could not). */
  readonly ready: Promise<void>;
  /** Runs a message group on the backend; its answer reaches `onData` in order, in one or more parts. */
  exec(bytes: Uint8Array, onData: (chunk: Uint8Array) => void): Promise<void>;
  /** Whether the backend is inside a transaction (as of the last answer). */
  isInTransaction(): boolean;
  /** Closes the backend (its files written), then the thread. */
  close(): Promise<void>;
}

export type EmbeddedThread = 'worker' | 'main';

export interface EngineStart {
  dataDir: string;
  /** `-c name=value` settings, in order. */
  settings: Array<[string, string]>;
}

/** From the host to the engine's thread: `open` once (the folder is the host's by then), then execs, then `close`. */
export type EngineRequest = { op: 'open'; start: EngineStart } | { op: 'exec'; id: number; bytes: Uint8Array } | { op: 'close' };
/** From the engine's thread to the host. */
export type EngineReply =
  | { op: 'ready' }
  | { op: 'failed'; message: string }
  | { op: 'data'; id: number; chunk: Uint8Array }
  | { op: 'done'; id: number; chunk?: Uint8Array; inTransaction: boolean }
  | { op: 'error'; id: number; message: string }
  | { op: 'closed' };

export function pgliteWasmFile(): string {
  return pgliteFile('pglite.wasm');
}

function pgliteFile(name: string): string {
  return path.join(path.dirname(require.resolve('@electric-sql/pglite')), name);
}

type PgliteModule = NonNullable<PGliteOptions['pgliteWasmModule']>;

/**
 * PGlite's WebAssembly module, compiled from its file (the compilation runs off the calling thread).
 * The file is read synchronously on purpose (9 MB from the page cache: milliseconds): an asynchronous
 * read completes in 512 KB turns of the event loop, which `serve` holds while it loads the host's
 * modules, so the compilation only began once they had all loaded, and the engine's start waited
 * for it.
 */
export function compilePglite(): Promise<PgliteModule> {
  const wasm = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<PgliteModule> } }).WebAssembly;
  try {
    return wasm.compile(fs.readFileSync(pgliteWasmFile()));
  } catch (e) {
    return Promise.reject(e as Error);
  }
}

/**
 * PGlite's file bundle (share/ and lib/: the catalogs' bootstrap files, time zones, encodings), which
 * it unpacks at every start, read at once: PGlite's own read is asynchronous, in the same 512 KB
 * turns of the event loop, with the thread idle between them. PGlite (0.5.14, pinned) reads a bundle
 * given to it only through `arrayBuffer()`, so the file's bytes are handed over as they are, where a
 * `Blob` would copy them twice.
 */
function pgliteBundle(): Blob {
  const bytes = fs.readFileSync(pgliteFile('pglite.data'));
  const buffer = bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.length ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
  return { arrayBuffer: () => Promise.resolve(buffer) } as unknown as Blob;
}

/** PGlite with `start`'s folder and settings, given its compiled module. */
export async function openPglite(start: EngineStart, module: PgliteModule): Promise<PGlite> {
  const { PGlite: PGliteCtor } = require('@electric-sql/pglite') as { PGlite: typeof PGlite & { defaultStartParams: string[] } };
  const startParams = [...PGliteCtor.defaultStartParams, ...start.settings.flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  const db = new (hostPglite(PGliteCtor))({ dataDir: start.dataDir, startParams, pgliteWasmModule: module, fsBundle: pgliteBundle() });
  await db.waitReady;
  return db;
}

let hostPgliteClass: (new (options: PGliteOptions) => PGlite) | undefined;

/**
 * PGlite without the query it runs at every start to learn the array types of its own `query()`
 * API (a scan of pg_type, the backend's first statement, 50 to 70 ms of a boot): the host sends the
 * wire protocol's bytes and reads its answers (`execProtocolRawStream`), and never calls that API.
 */
function hostPglite(base: typeof PGlite): new (options: PGliteOptions) => PGlite {
  return (hostPgliteClass ??= class HostPglite extends base {
    override async _initArrayTypes(): Promise<void> {
      /* the host parses no result through PGlite */
    }
  });
}

/** An engine being made ready before its folder is the host's (while the host waits for the folder's lock). */
export interface PreparedEngine {
  /** Starts the backend on `dataDir` (initialised, and owned by this process) with `settings`. */
  open(dataDir: string, settings: Record<string, string>): EmbeddedEngine;
  /** Gives it up unopened (the folder could not be had). */
  discard(): Promise<void>;
}

/**
 * Begins an engine on the given thread: PGlite's WebAssembly is compiled (and, on a worker, PGlite
 * loaded) at once, so that it is done while the host waits for the folder or loads its modules.
 */
export function prepareEmbeddedEngine(thread: EmbeddedThread): PreparedEngine {
  if (thread === 'main') {
    const compiled = compilePglite();
    compiled.catch(() => undefined);
    return { open: (dataDir, settings) => new MainThreadEngine({ dataDir, settings: Object.entries(settings) }, compiled), discard: async () => undefined };
  }
  const engine = new WorkerEngine();
  return {
    open: (dataDir, settings) => engine.open({ dataDir, settings: Object.entries(settings) }),
    discard: () => engine.close(),
  };
}

/** PGlite on the host's own thread. */
class MainThreadEngine implements EmbeddedEngine {
  readonly ready: Promise<void>;
  private readonly db: Promise<PGlite>;

  constructor(start: EngineStart, compiled: Promise<PgliteModule>) {
    this.db = compiled.then((module) => openPglite(start, module));
    this.ready = this.db.then(async (db) => {
      await db.waitReady;
    });
    this.ready.catch(() => undefined);
  }

  private current?: PGlite;

  async exec(bytes: Uint8Array, onData: (chunk: Uint8Array) => void): Promise<void> {
    const db = (this.current ??= await this.db);
    await db.runExclusive(() => db.execProtocolRawStream(bytes, { onRawData: onData }));
  }

  isInTransaction(): boolean {
    return this.current?.isInTransaction() ?? false;
  }

  async close(): Promise<void> {
    const db = await this.db.catch(() => undefined);
    await db?.close();
  }
}

/** The engine's thread is gone (it failed, or was closed): every call in flight and every later one fails with it. */
export class EmbeddedEngineStopped extends InternalFault {
  constructor(reason: string) {
    super('embedded-engine', `the embedded database engine stopped: ${reason}`);
  }
}

/** PGlite on a worker thread (embedded-engine-worker.ts). */
class WorkerEngine implements EmbeddedEngine {
  readonly ready: Promise<void>;
  private opened = false;
  private readonly worker: Worker;
  private readonly pending = new Map<number, { onData: (chunk: Uint8Array) => void; resolve: () => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private inTransaction = false;
  private stopped?: Error;
  private closing?: Promise<void>;
  private onClosed?: () => void;

  constructor() {
    const file = path.join(__dirname, `embedded-engine-worker${path.extname(__filename)}`);
    // A checkout runs the TypeScript sources: the thread compiles them with the same hook (bin/ts-register.js).
    const hook = file.endsWith('.ts') ? `require(${JSON.stringify(path.join(PROJECT_ROOT, 'bin', 'ts-register.js'))});` : '';
    this.worker = new Worker(`${hook}require(${JSON.stringify(file)});`, { eval: true, stdout: false, stderr: false });
    let started: () => void;
    let failed: (e: Error) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      started = resolve;
      failed = reject;
    });
    this.ready.catch(() => undefined);
    this.worker.on('message', (m: EngineReply) => {
      switch (m.op) {
        case 'ready':
          return started();
        case 'failed':
          this.stop(new EmbeddedEngineStopped(m.message));
          return failed(new Error(m.message));
        case 'data':
          return this.pending.get(m.id)?.onData(m.chunk);
        case 'done': {
          const p = this.pending.get(m.id);
          this.pending.delete(m.id);
          this.inTransaction = m.inTransaction;
          if (m.chunk) p?.onData(m.chunk);
          return p?.resolve();
        }
        case 'error': {
          const p = this.pending.get(m.id);
          this.pending.delete(m.id);
          return p?.reject(new Error(m.message));
        }
        case 'closed':
          return this.onClosed?.();
      }
    });
    this.worker.on('error', (e) => {
      this.stop(new EmbeddedEngineStopped(e.message));
      failed(e);
    });
    this.worker.on('exit', (code) => {
      this.stop(new EmbeddedEngineStopped(`its thread exited (${code})`));
      failed(new EmbeddedEngineStopped(`its thread exited (${code})`));
      this.onClosed?.();
    });
  }

  /** Starts the backend (once): PGlite, loaded and compiled meanwhile, opens the folder. */
  open(start: EngineStart): this {
    if (this.opened) throw new InvariantViolation('the embedded engine was opened twice');
    this.opened = true;
    this.worker.postMessage({ op: 'open', start } satisfies EngineRequest);
    return this;
  }

  /** Every call in flight and every later one fails with `reason`. */
  private stop(reason: Error): void {
    this.stopped ??= reason;
    for (const p of this.pending.values()) p.reject(this.stopped);
    this.pending.clear();
  }

  exec(bytes: Uint8Array, onData: (chunk: Uint8Array) => void): Promise<void> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { onData, resolve, reject });
      this.worker.postMessage({ op: 'exec', id, bytes } satisfies EngineRequest);
    });
  }

  isInTransaction(): boolean {
    return this.inTransaction;
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      if (!this.stopped && this.opened) {
        await new Promise<void>((resolve) => {
          this.onClosed = resolve;
          this.worker.postMessage({ op: 'close' } satisfies EngineRequest);
        });
      }
      this.stop(new EmbeddedEngineStopped('closed'));
      await this.worker.terminate();
    })();
    return this.closing;
  }
}
