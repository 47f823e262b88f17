import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Disconnects a client that stopped reading: a response is pending on its socket (the kernel buffer
 * is full) and not one more byte of it left for `ms`. Node's own timeouts bound how long a client may
 * take to *send* a request (headersTimeout, requestTimeout) and how long an idle keep-alive connection
 * lives, but none bounds a response nobody reads; such a socket would hold its buffers forever.
 */
export function installSendTimeout(server: Server, ms: number): void {
  const watched = new Map<Socket, { flushed: number; since: number }>();
  server.on('connection', (socket: Socket) => {
    watched.set(socket, { flushed: 0, since: Date.now() });
    socket.once('close', () => watched.delete(socket));
  });
  const timer = setInterval(
    () => {
      const now = Date.now();
      for (const [socket, w] of watched) {
        // bytesWritten counts what is still buffered in the process too; the difference is what left it.
        const flushed = socket.bytesWritten - socket.writableLength;
        if (socket.writableLength === 0 || flushed !== w.flushed) {
          w.flushed = flushed;
          w.since = now;
        } else if (now - w.since > ms) {
          socket.destroy();
          watched.delete(socket);
        }
      }
    },
    Math.max(50, Math.min(1000, Math.floor(ms / 4))),
  );
  timer.unref();
  server.once('close', () => clearInterval(timer));
}
