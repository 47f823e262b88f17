import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';

/**
 * How long a closing HTTP server lets the requests in flight finish before it drops their
 * connections. Without a bound, one open event stream (SSE, a long poll) held the close until the
 * process was killed, so the database was never closed cleanly; a follower resumes elsewhere with
 * `Last-Event-ID`.
 */
export const CLOSE_GRACE_MS = 3000;

/** Drops the connections still open `graceMs` after the server began to close (idle ones go at once, as Fastify does). */
export function installCloseGrace(fastify: FastifyInstance, graceMs = CLOSE_GRACE_MS): void {
  fastify.addHook('preClose', (done) => {
    const server = fastify.server as Server;
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    timer.unref();
    server.once('close', () => clearTimeout(timer));
    done();
  });
}
