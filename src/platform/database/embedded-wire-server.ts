import { randomInt } from 'node:crypto';
import * as net from 'node:net';
import { Duplex } from 'node:stream';
import type { EmbeddedEngine } from './embedded-engine';
import { InProcessStream, WireSocket } from './in-process-stream';
import { Cancelled, Closed, WireConnection } from './wire-connection';
import { errorResponse } from './wire-protocol';

/**
 * The Postgres wire protocol in front of the one PGlite backend of the embedded database.
 *
 * PGlite is a single backend session: messages of two connections must never interleave on it (the
 * unnamed statement and portal of an extended-protocol exchange belong to whoever sent the last
 * Parse/Bind) and a transaction must see only its own statements. So the backend is handed to one
 * connection at a time: a connection acquires it with its first message and keeps it until the
 * backend answers ReadyForQuery with transaction status idle. A whole Parse/Bind/Execute/Sync group,
 * and a whole transaction, therefore run exclusively; the other connections queue in arrival order.
 * Named prepared statements outlive a group: each connection's names are given a prefix of its own on
 * the backend, and closed when it goes away (embedded-statement-names.ts).
 *
 * A connection that goes away while it holds the backend (mid-group or inside a transaction) has its
 * group closed and its transaction rolled back before the next one gets it. A holder idle inside a
 * transaction longer than `idleInTransactionTimeoutMs` is terminated (as PostgreSQL's
 * idle_in_transaction_session_timeout does), and a connection waiting longer than `waitWarnMs` is
 * reported at error level with what holds the backend, because the usual cause is host code that
 * holds a transaction on one connection while it waits for a query on another.
 *
 * This file is the server and its scheduling of the backend; a connection's protocol handling is
 * wire-connection.ts, the message codec wire-protocol.ts, the in-memory transport in-process-stream.ts.
 */
export interface WireServerOptions {
  /** Unix socket path (or a TCP port on 127.0.0.1 when a number). */
  listen: string | number;
  /** Connections accepted at once; more are refused with SQLSTATE 53300. */
  maxConnections?: number;
  /** Terminate a connection idle inside a transaction for this long (0: never). */
  idleInTransactionTimeoutMs?: number;
  /** Report a connection that waited this long for the backend (and again every 30 s). */
  waitWarnMs?: number;
  log?: WireServerLog;
}

/** Where the server logs: one object, its `msg` the message and the facts beside it (the host's logging style). */
export interface WireServerLog {
  warn(line: { msg: string } & Record<string, unknown>): void;
  error(line: { msg: string } & Record<string, unknown>): void;
}

export interface WireServerStats {
  connections: number;
  waiting: number;
  /** Whether a connection holds the backend now. */
  busy: boolean;
}


export class EmbeddedWireServer {
  private server?: net.Server;
  private readonly conns = new Map<number, WireConnection>();
  private holder?: WireConnection;
  private readonly queue: Array<{ conn: WireConnection; resolve: () => void; reject: (e: Error) => void }> = [];
  private sweeper?: NodeJS.Timeout;
  private nextId = 1;
  private stopping = false;

  constructor(
    readonly engine: EmbeddedEngine,
    readonly options: WireServerOptions,
  ) {}

  async start(): Promise<void> {
    await this.engine.ready;
    const server = net.createServer((socket) => this.accept(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      const done = () => {
        server.off('error', reject);
        resolve();
      };
      if (typeof this.options.listen === 'number') server.listen(this.options.listen, '127.0.0.1', done);
      else server.listen(this.options.listen, done);
    });
    server.on('error', (e) => this.options.log?.error({ msg: 'embedded database: socket server error', err: e.message }));
    this.sweeper = setInterval(() => this.sweep(), 1000);
    this.sweeper.unref();
  }

  /** The TCP port when listening on one (tests). */
  port(): number | undefined {
    const a = this.server?.address();
    return typeof a === 'object' && a ? a.port : undefined;
  }

  stats(): WireServerStats {
    return { connections: this.conns.size, waiting: this.queue.length, busy: this.holder !== undefined };
  }

  /** Stops accepting, ends every connection (rolling back what they left open) and closes the socket. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.sweeper);
    const closing = this.server ? new Promise<void>((r) => this.server!.close(() => r())) : Promise.resolve();
    const conns = [...this.conns.values()];
    for (const c of conns) c.terminate(errorResponse('FATAL', '57P01', 'terminating connection: the embedded database is shutting down'));
    await Promise.all(conns.map((c) => c.finished));
    await closing;
  }

  /**
   * A connection from this process that needs no socket: a stream pg can use as its `stream`, wired
   * to the server in memory. A statement's answer then reaches the waiting code without a trip
   * through the event loop's I/O phase, so a transaction holds the backend only as long as its own
   * statements take, not as long as everything else the process has queued meanwhile.
   */
  connectInProcess(): Duplex {
    const [client, server] = InProcessStream.pair();
    client.onConnect = () => {
      if (client.destroyed) return;
      this.accept(server);
      client.emit('connect');
    };
    return client;
  }

  private accept(socket: WireSocket): void {
    if (this.stopping) {
      socket.destroy();
      return;
    }
    const max = this.options.maxConnections ?? 64;
    if (this.conns.size >= max) {
      socket.end(errorResponse('FATAL', '53300', `sorry, too many clients already (the embedded database accepts ${max} connections)`));
      return;
    }
    const id = this.nextId++;
    const conn = new WireConnection(this, id, randomInt(1, 2 ** 31 - 1), socket);
    this.conns.set(id, conn);
    void conn.finished.then(() => this.conns.delete(id));
  }

  /** A CancelRequest: a statement still queued for the backend is answered 57014; one running cannot be interrupted. */
  /** @internal */ cancel(processId: number, secret: number): void {
    const conn = this.conns.get(processId);
    if (!conn || conn.secret !== secret) return;
    const i = this.queue.findIndex((w) => w.conn === conn);
    if (i < 0) return;
    const [w] = this.queue.splice(i, 1);
    w.reject(new Cancelled());
  }

  /** @internal */ acquire(conn: WireConnection): Promise<void> {
    if (!this.holder) {
      this.holder = conn;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => this.queue.push({ conn, resolve, reject }));
  }

  /** @internal */ release(conn: WireConnection): void {
    if (this.holder !== conn) return;
    this.holder = undefined;
    const next = this.queue.shift();
    if (next) {
      this.holder = next.conn;
      next.resolve();
    }
  }

  /** @internal */ abandon(conn: WireConnection): void {
    const i = this.queue.findIndex((w) => w.conn === conn);
    if (i >= 0) this.queue.splice(i, 1)[0].reject(new Closed());
  }

  /** Runs protocol bytes on the backend (the caller holds it), streaming the answer to `onData`. */
  /** @internal */ async exec(bytes: Uint8Array, onData?: (chunk: Uint8Array) => void): Promise<void> {
    await this.engine.exec(bytes, onData ?? (() => undefined));
  }

  /**
   * The same, answering the whole output. (Always through the streaming call: PGlite keeps the last
   * stream callback installed, and its non-streaming call would hand its output to that callback.)
   */
  /** @internal */ async execCollect(bytes: Uint8Array): Promise<Buffer> {
    const parts: Buffer[] = [];
    await this.exec(bytes, (chunk) => parts.push(Buffer.from(chunk)));
    return Buffer.concat(parts);
  }

  private sweep(): void {
    const now = Date.now();
    const holder = this.holder;
    const idleLimit = this.options.idleInTransactionTimeoutMs ?? 0;
    if (holder && idleLimit > 0 && holder.idleInTransactionSince !== undefined && now - holder.idleInTransactionSince > idleLimit) {
      this.options.log?.error({ msg: 'embedded database: terminating a connection idle inside a transaction (its transaction is rolled back)', connection: holder.id, idleMs: now - holder.idleInTransactionSince, statement: holder.lastStatement, waiting: this.queue.length });
      holder.terminate(errorResponse('FATAL', '25P03', 'terminating connection due to idle-in-transaction timeout'));
    }
    const warnMs = this.options.waitWarnMs ?? 5000;
    for (const w of this.queue) {
      const waited = now - (w.conn.waitingSince ?? now);
      if (waited < warnMs || now < w.conn.nextWaitReport) continue;
      w.conn.nextWaitReport = now + 30_000;
      const h = this.holder;
      this.options.log?.error({
        msg: 'embedded database: a connection is waiting long for the backend (is a transaction waiting for a query on another connection?)',
        connection: w.conn.id,
        waitedMs: waited,
        waiting: this.queue.length,
        holder: h
          ? {
              connection: h.id,
              heldMs: now - (h.heldSince ?? now),
              state: h.executing ? 'executing' : h.idleInTransactionSince !== undefined ? (h.txStatus === 'I' ? 'inside a message group' : 'idle in transaction') : 'idle',
              statement: h.lastStatement,
            }
          : undefined,
      });
    }
  }
}
