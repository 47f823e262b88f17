import { Duplex } from 'node:stream';

/** What a connection needs of its transport: a unix socket, or an in-process stream. */
export type WireSocket = Duplex & { setNoDelay?(noDelay?: boolean): unknown };

/** One end of an in-memory pair: what one end writes, the other reads. Quacks like net.Socket for pg. */
export class InProcessStream extends Duplex {
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
