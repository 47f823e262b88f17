import type { EmbeddedWireServer } from './embedded-wire-server';
import { BatchStep, StatementNames } from './embedded-statement-names';
import type { WireSocket } from './in-process-stream';
import { announceEmbedded, BACKEND_KEY, CANCEL_REQUEST, commandComplete, errorResponse, GSSENC_REQUEST, lastReadyStatus, message, PROTOCOL_3_0, QUERY, READY, readyForQuery, ROLLBACK_MESSAGE, SSL_REQUEST, statementOf, SYNC, SYNC_MESSAGE, TERMINATE } from './wire-protocol';

/** A statement cancelled (CancelRequest) while it waited for the backend. */
export class Cancelled extends Error {}
/** The connection went away while it waited for the backend. */
export class Closed extends Error {}

/** One client connection of the wire server. */
export class WireConnection {
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
  /** This connection's named prepared statements, under names of its own on the shared backend. */
  private readonly statements: StatementNames;

  constructor(
    private readonly server: EmbeddedWireServer,
    readonly id: number,
    readonly secret: number,
    private readonly socket: WireSocket,
  ) {
    this.statements = new StatementNames(`w${id}_`);
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
      if (!(e instanceof Closed)) this.server.options.log?.error({ msg: 'embedded database: a connection failed', connection: this.id, err: (e as Error).message });
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
      this.write(announceEmbedded(out));
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
      for (const step of this.statements.rewrite(batch)) await this.runStep(step);
    } finally {
      this.executing = false;
    }
    if (this.atReady && this.txStatus === 'I') this.releaseBackend();
    else this.idleInTransactionSince = Date.now();
  }

  private async runStep(step: BatchStep): Promise<void> {
    const answer = (chunk: Uint8Array) => {
      this.scan(chunk);
      this.write(Buffer.from(chunk));
    };
    if ('exec' in step) return this.server.exec(step.exec, answer);
    // DEALLOCATE ALL: this connection's statements only (the others' share the backend). Inside a
    // failed transaction the backend refuses it as it would any statement.
    if (this.txStatus === 'E') return this.server.exec(message(QUERY, Buffer.from('DEALLOCATE ALL\0')), answer);
    const close = this.statements.closeMessages();
    if (close) await this.server.execCollect(close);
    this.statements.forgetAll();
    answer(Buffer.concat([commandComplete('DEALLOCATE ALL'), readyForQuery(this.txStatus)]));
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
          if ((status && status !== 'I') || this.server.engine.isInTransaction()) await this.server.execCollect(ROLLBACK_MESSAGE);
        }
      } catch (e) {
        this.server.options.log?.error({ msg: 'embedded database: could not roll back the transaction of a closed connection', connection: this.id, err: (e as Error).message });
      }
      try {
        await this.closeStatements();
      } catch (e) {
        this.server.options.log?.error({ msg: 'embedded database: could not close the prepared statements of a closed connection', connection: this.id, err: (e as Error).message });
      } finally {
        this.releaseBackend();
        this.done();
      }
    })();
    return this.cleaning;
  }

  /** Closes what the connection left prepared (taking its turn on the backend unless it holds it). */
  private async closeStatements(): Promise<void> {
    const close = this.statements.closeMessages();
    if (!close) return;
    if (!this.holding) {
      await this.server.acquire(this);
      this.holding = true;
    }
    await this.server.execCollect(close);
    this.statements.forgetAll();
  }
}
