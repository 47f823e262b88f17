import { randomInt } from 'node:crypto';
import * as net from 'node:net';
import { Duplex } from 'node:stream';
import type { PGlite } from '@electric-sql/pglite';

/**
 * The Postgres wire protocol in front of the one PGlite backend of the embedded database.
 *
 * PGlite is a single backend session: messages of two connections must never interleave on it (the
 * unnamed statement and portal of an extended-protocol exchange belong to whoever sent the last
 * Parse/Bind) and a transaction must see only its own statements. So the backend is handed to one
 * connection at a time: a connection acquires it with its first message and keeps it until the
 * backend answers ReadyForQuery with transaction status idle. A whole Parse/Bind/Execute/Sync group,
 * and a whole transaction, therefore run exclusively; the other connections queue in arrival order.
 *
 * A connection that goes away while it holds the backend (mid-group or inside a transaction) has its
 * group closed and its transaction rolled back before the next one gets it. A holder idle inside a
 * transaction longer than `idleInTransactionTimeoutMs` is terminated (as PostgreSQL's
 * idle_in_transaction_session_timeout does), and a connection waiting longer than `waitWarnMs` is
 * reported at error level with what holds the backend, because the usual cause is host code that
 * holds a transaction on one connection while it waits for a query on another.
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

export interface WireServerLog {
  warn(data: Record<string, unknown>, msg: string): void;
  error(data: Record<string, unknown>, msg: string): void;
}

export interface WireServerStats {
  connections: number;
  waiting: number;
  /** Whether a connection holds the backend now. */
  busy: boolean;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
const PROTOCOL_3_0 = 196608;
const TERMINATE = 0x58; // 'X'
const SYNC = 0x53; // 'S'
const QUERY = 0x51; // 'Q'
const PARSE = 0x50; // 'P'
const READY = 0x5a; // 'Z'
const BACKEND_KEY = 0x4b; // 'K'

class Cancelled extends Error {}
class Closed extends Error {}

function message(type: number, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head[0] = type;
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/** An ErrorResponse with severity, SQLSTATE and message. */
export function errorResponse(severity: 'ERROR' | 'FATAL', code: string, text: string): Buffer {
  const field = (t: string, v: string) => Buffer.concat([Buffer.from(t), Buffer.from(v, 'utf8'), Buffer.from([0])]);
  return message(0x45, Buffer.concat([field('S', severity), field('V', severity), field('C', code), field('M', text), Buffer.from([0])]));
}

function readyForQuery(status: 'I' | 'T' | 'E'): Buffer {
  return message(READY, Buffer.from(status));
}

const SYNC_MESSAGE = message(SYNC, Buffer.alloc(0));
const ROLLBACK_MESSAGE = message(QUERY, Buffer.from('ROLLBACK\0'));

/** The SQL text of the first Query or Parse message of a batch, shortened, for diagnostics. */
function statementOf(batch: Buffer): string | undefined {
  let i = 0;
  while (i + 5 <= batch.length) {
    const type = batch[i];
    const len = batch.readInt32BE(i + 1);
    const body = batch.subarray(i + 5, i + 1 + len);
    if (type === QUERY) return body.subarray(0, Math.max(0, body.indexOf(0))).toString('utf8').slice(0, 200);
    if (type === PARSE) {
      const nameEnd = body.indexOf(0);
      const sql = body.subarray(nameEnd + 1);
      return sql.subarray(0, Math.max(0, sql.indexOf(0))).toString('utf8').slice(0, 200);
    }
    i += 1 + len;
  }
  return undefined;
}

/** The transaction status of the last ReadyForQuery in a complete response, if any. */
function lastReadyStatus(out: Uint8Array): string | undefined {
  let status: string | undefined;
  let i = 0;
  const b = Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  while (i + 5 <= b.length) {
    const len = b.readInt32BE(i + 1);
    if (b[i] === READY && i + 5 < b.length) status = String.fromCharCode(b[i + 5]);
    i += 1 + len;
  }
  return status;
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
    readonly db: PGlite,
    readonly options: WireServerOptions,
  ) {}

  async start(): Promise<void> {
    await this.db.waitReady;
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
    server.on('error', (e) => this.options.log?.error({ err: e.message }, 'embedded database: socket server error'));
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
    await this.db.runExclusive(() => this.db.execProtocolRawStream(bytes, { onRawData: onData ?? (() => undefined) }));
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
      this.options.log?.error(
        { connection: holder.id, idleMs: now - holder.idleInTransactionSince, statement: holder.lastStatement, waiting: this.queue.length },
        'embedded database: terminating a connection idle inside a transaction (its transaction is rolled back)',
      );
      holder.terminate(errorResponse('FATAL', '25P03', 'terminating connection due to idle-in-transaction timeout'));
    }
    const warnMs = this.options.waitWarnMs ?? 5000;
    for (const w of this.queue) {
      const waited = now - (w.conn.waitingSince ?? now);
      if (waited < warnMs || now < w.conn.nextWaitReport) continue;
      w.conn.nextWaitReport = now + 30_000;
      const h = this.holder;
      this.options.log?.error(
        {
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
        },
        'embedded database: a connection is waiting long for the backend (is a transaction waiting for a query on another connection?)',
      );
    }
  }
}

/** What a connection needs of its transport: a unix socket, or an in-process stream. */
type WireSocket = Duplex & { setNoDelay?(noDelay?: boolean): unknown };

/** One end of an in-memory pair: what one end writes, the other reads. Quacks like net.Socket for pg. */
class InProcessStream extends Duplex {
  private peer?: InProcessStream;
  onConnect?: () => void;

  static pair(): [InProcessStream, InProcessStream] {
    const a = new InProcessStream();
    const b = new InProcessStream();
    a.peer = b;
    b.peer = a;
    return [a, b];
  }

  /** As net.Socket.connect: 'connect' follows on the next tick. */
  connect(): this {
    const go = this.onConnect;
    this.onConnect = undefined;
    if (go) process.nextTick(go);
    return this;
  }
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }

  override _read(): void {
    /* pushed by the peer */
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    if (this.peer && !this.peer.destroyed) this.peer.push(chunk);
    cb();
  }

  override _final(cb: (e?: Error | null) => void): void {
    // end() here: the peer reads its end, and both sides are done with the connection.
    if (this.peer && !this.peer.destroyed) this.peer.destroy();
    cb();
  }

  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    const peer = this.peer;
    this.peer = undefined;
    if (peer && !peer.destroyed) peer.destroy();
    cb(err);
  }
}

/** One client connection of the wire server. */
class WireConnection {
  private buf: Buffer = Buffer.alloc(0);
  private started = false;
  private pumping = false;
  private closed = false;
  private holding = false;
  private done!: () => void;
  readonly finished = new Promise<void>((r) => (this.done = r));
  waitingSince?: number;
  nextWaitReport = 0;
  heldSince?: number;
  executing = false;
  /** Set while the connection holds the backend between batches (inside a group or a transaction). */
  idleInTransactionSince?: number;
  lastStatement?: string;
  txStatus: 'I' | 'T' | 'E' = 'I';
  /** The backend's last message was ReadyForQuery (nothing of a message group is pending). */
  private atReady = true;
  // Incremental scan of the backend's answer: message boundaries and ReadyForQuery statuses.
  private outHead = Buffer.alloc(5);
  private outHeadLen = 0;
  private outLeft = 0;
  private outIsReady = false;

  constructor(
    private readonly server: EmbeddedWireServer,
    readonly id: number,
    readonly secret: number,
    private readonly socket: WireSocket,
  ) {
    socket.setNoDelay?.(true);
    socket.on('data', (d: Buffer) => {
      this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
      void this.pump();
    });
    socket.on('error', () => this.onClose());
    socket.on('close', () => this.onClose());
  }

  /** Ends the connection with a last message; what it left open is rolled back. */
  terminate(last?: Buffer): void {
    if (this.closed) return;
    if (last && this.socket.writable) {
      this.socket.end(last);
      setTimeout(() => this.socket.destroy(), 500).unref();
    } else this.socket.destroy();
    this.onClose();
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.server.abandon(this);
    if (!this.pumping) void this.cleanup();
  }

  private write(chunk: Uint8Array): void {
    if (!this.closed && this.socket.writable) this.socket.write(chunk);
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    // pg writes the messages of one query (Parse, Bind, Describe, Execute, Sync) one by one in the
    // same tick: waiting a microtask lets the whole group arrive, so it runs as one batch.
    await Promise.resolve();
    try {
      while (!this.closed) {
        if (!this.started) {
          if (!(await this.startup())) break;
          continue;
        }
        const { batch, terminate } = this.take();
        if (batch) await this.run(batch);
        if (terminate) {
          this.terminate();
          break;
        }
        if (!batch) break;
      }
    } catch (e) {
      if (!(e instanceof Closed)) this.server.options.log?.error({ connection: this.id, err: (e as Error).message }, 'embedded database: a connection failed');
      this.terminate(errorResponse('FATAL', 'XX000', `the embedded database failed: ${(e as Error).message}`));
    } finally {
      this.pumping = false;
      if (this.closed) await this.cleanup();
      else if (this.buf.length && this.complete()) void this.pump();
    }
  }

  /** Whether the buffer holds at least one complete message. */
  private complete(): boolean {
    return this.buf.length >= 5 && this.buf.length >= 1 + this.buf.readInt32BE(1);
  }

  /** SSL/GSS requests are declined, a cancel request is applied, the startup packet is run on the backend. */
  private async startup(): Promise<boolean> {
    if (this.buf.length < 8) return false;
    const len = this.buf.readInt32BE(0);
    const code = this.buf.readInt32BE(4);
    if (len < 8 || len > 10_000) {
      this.terminate(errorResponse('FATAL', '08P01', 'invalid startup packet length'));
      return false;
    }
    if (this.buf.length < len) return false;
    const packet = this.buf.subarray(0, len);
    this.buf = this.buf.subarray(len);
    if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
      this.write(Buffer.from('N'));
      return true;
    }
    if (code === CANCEL_REQUEST && len === 16) {
      this.server.cancel(packet.readInt32BE(8), packet.readInt32BE(12));
      this.terminate();
      return false;
    }
    if (code !== PROTOCOL_3_0) {
      this.terminate(errorResponse('FATAL', '0A000', `unsupported frontend protocol ${code >> 16}.${code & 0xffff}: the embedded database speaks 3.0`));
      return false;
    }
    await this.acquire();
    try {
      const out = await this.server.execCollect(packet);
      // Every connection shares the one backend: give each its own cancel key.
      for (let i = 0; i + 5 <= out.length; ) {
        const mlen = out.readInt32BE(i + 1);
        if (out[i] === BACKEND_KEY && mlen === 12) {
          out.writeInt32BE(this.id, i + 5);
          out.writeInt32BE(this.secret, i + 9);
        }
        i += 1 + mlen;
      }
      this.write(out);
      this.started = true;
      const status = lastReadyStatus(out);
      if (status === 'I' || status === undefined) this.releaseBackend();
      return true;
    } catch (e) {
      this.releaseBackend();
      throw e;
    }
  }

  /** The complete messages buffered (up to a Terminate), as one batch. */
  private take(): { batch?: Buffer; terminate: boolean } {
    let i = 0;
    let terminate = false;
    while (i + 5 <= this.buf.length) {
      const len = this.buf.readInt32BE(i + 1);
      if (len < 4) {
        terminate = true;
        break;
      }
      if (i + 1 + len > this.buf.length) break;
      if (this.buf[i] === TERMINATE) {
        terminate = true;
        break;
      }
      i += 1 + len;
    }
    const batch = i > 0 ? this.buf.subarray(0, i) : undefined;
    this.buf = terminate ? Buffer.alloc(0) : this.buf.subarray(i);
    return { batch, terminate };
  }

  private async acquire(): Promise<void> {
    if (this.holding) return;
    this.waitingSince = Date.now();
    this.nextWaitReport = 0;
    try {
      await this.server.acquire(this);
    } finally {
      this.waitingSince = undefined;
    }
    if (this.closed) {
      // Given the backend after the socket went away: hand it on.
      this.server.release(this);
      throw new Closed();
    }
    this.holding = true;
    this.heldSince = Date.now();
  }

  private releaseBackend(): void {
    if (!this.holding) return;
    this.holding = false;
    this.heldSince = undefined;
    this.idleInTransactionSince = undefined;
    this.server.release(this);
  }

  private async run(batch: Buffer): Promise<void> {
    try {
      await this.acquire();
    } catch (e) {
      if (e instanceof Cancelled) return this.answerCancelled(batch);
      throw e;
    }
    this.lastStatement = statementOf(batch) ?? this.lastStatement;
    this.idleInTransactionSince = undefined;
    this.executing = true;
    try {
      await this.server.exec(batch, (chunk) => {
        this.scan(chunk);
        this.write(Buffer.from(chunk));
      });
    } finally {
      this.executing = false;
    }
    if (this.atReady && this.txStatus === 'I') this.releaseBackend();
    else this.idleInTransactionSince = Date.now();
  }

  /** A batch cancelled while queued: its first group is answered 57014, the rest goes back to the buffer. */
  private answerCancelled(batch: Buffer): void {
    let i = 0;
    while (i + 5 <= batch.length) {
      const type = batch[i];
      i += 1 + batch.readInt32BE(i + 1);
      if (type === SYNC || type === QUERY) break;
    }
    this.write(errorResponse('ERROR', '57014', 'canceling statement due to user request'));
    this.write(readyForQuery('I'));
    const rest = batch.subarray(i);
    if (rest.length) this.buf = Buffer.concat([rest, this.buf]);
  }

  /** Follows message boundaries of the backend's answer to know when it said ReadyForQuery, and with which status. */
  private scan(chunk: Uint8Array): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.outLeft > 0) {
        if (this.outIsReady) {
          const s = String.fromCharCode(chunk[i]);
          if (s === 'I' || s === 'T' || s === 'E') this.txStatus = s;
        }
        const n = Math.min(this.outLeft, chunk.length - i);
        this.outLeft -= n;
        i += n;
        if (this.outLeft === 0 && this.outIsReady) this.atReady = true;
        this.outIsReady = false;
        continue;
      }
      this.outHead[this.outHeadLen++] = chunk[i++];
      if (this.outHeadLen === 5) {
        this.outHeadLen = 0;
        this.outIsReady = this.outHead[0] === READY;
        this.outLeft = this.outHead.readInt32BE(1) - 4;
        this.atReady = false;
        if (this.outLeft === 0) this.outIsReady = false;
      }
    }
  }

  /** Runs once: closes what the connection left open on the backend and hands the backend on. */
  private cleaning?: Promise<void>;
  private cleanup(): Promise<void> {
    this.cleaning ??= (async () => {
      try {
        if (this.holding && !(this.atReady && this.txStatus === 'I')) {
          // Close an unfinished message group, then roll back an open transaction.
          const status = lastReadyStatus(await this.server.execCollect(SYNC_MESSAGE));
          if ((status && status !== 'I') || this.server.db.isInTransaction()) await this.server.execCollect(ROLLBACK_MESSAGE);
        }
      } catch (e) {
        this.server.options.log?.error({ connection: this.id, err: (e as Error).message }, 'embedded database: could not roll back the transaction of a closed connection');
      } finally {
        this.releaseBackend();
        this.done();
      }
    })();
    return this.cleaning;
  }
}
