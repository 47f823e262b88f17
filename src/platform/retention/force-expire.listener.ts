import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { StartupError } from '../errors/startup-error';
import { ForceExpireOutcome, ForceExpireService } from './force-expire.service';

/** How long the seam waits for a run that is still going to finish before it answers 409. */
export const FORCE_EXPIRE_WAIT_MS = 10_000;
const ROUTE = /^\/runs\/([^/]+)\/expire$/;

const ANSWERS: Record<Exclude<ForceExpireOutcome, 'expired'>, { status: number; error: string; message: string }> = {
  not_found: { status: 404, error: 'not_found', message: 'No such run.' },
  not_terminal: { status: 409, error: 'run_not_terminal', message: 'The run has not finished; retention never deletes a run that is still going.' },
  kept: { status: 409, error: 'run_kept', message: 'The run is kept (a pending gate names it, an active goal counts it, or a request holds it).' },
};

/**
 * The retention force-expire seam (production-retention-expiry; capabilities.schema.json
 * `production.retention.testForceExpire`): a host-private listener the conformance suite calls
 * without credentials, at `OPENWOP_TEST_FORCE_EXPIRE_URL`, to expire a run it just started.
 *
 * It exists only with OPENWOP_TEST_SEAMS=true and OPENWOP_TEST_FORCE_EXPIRE_PORT set, and listens on
 * 127.0.0.1 whatever HOST says: a process on the host's machine can reach it, the network cannot.
 * `POST /runs/{runId}/expire` deletes the run now through the retention sweep's deletion (the run,
 * its node rows, events, invocations, closed gates and artifacts; the audit log stays), waiting up
 * to FORCE_EXPIRE_WAIT_MS for a run still going to finish: 204 expired, 404 unknown run, 409
 * `run_not_terminal` (still going) or `run_kept` (a keeper keeps it). The run then reads as the
 * canonical 404 `not_found`, as a run the sweep deleted does.
 */
@Injectable()
export class ForceExpireListener implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('retention');
  private server?: Server;
  private boundPort?: number;
  /** How long a run still going is waited for (FORCE_EXPIRE_WAIT_MS; a test shortens it). */
  waitMs = FORCE_EXPIRE_WAIT_MS;

  constructor(
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    private readonly expiry: ForceExpireService,
  ) {}

  /** The port the seam listens on (undefined: it is not open). */
  get port(): number | undefined {
    return this.boundPort;
  }

  async onApplicationBootstrap(): Promise<void> {
    const port = this.config.forceExpire.port;
    if (!this.config.testSeams || port === undefined) return;
    const server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e) => reject(new StartupError('listen', `the force-expire seam cannot listen on 127.0.0.1:${port}: ${(e as Error).message}`, { cause: e })));
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.boundPort = (server.address() as AddressInfo).port;
    this.logger.warn({ msg: 'WARNING: the retention force-expire test seam is listening (OPENWOP_TEST_FORCE_EXPIRE_PORT); it must never be on in production', url: `http://127.0.0.1:${this.boundPort}/runs/{runId}/expire` });
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.boundPort = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    req.resume();
    const send = (status: number, body?: { error: string; message: string }, headers: Record<string, string> = {}) => {
      res.writeHead(status, { ...(body ? { 'content-type': 'application/json' } : {}), 'cache-control': 'no-store', ...headers });
      res.end(body ? JSON.stringify(body) : undefined);
    };
    const path = (req.url ?? '').split('?')[0];
    const m = ROUTE.exec(path);
    if (!m) return send(404, { error: 'not_found', message: 'No such route: the force-expire seam serves POST /runs/{runId}/expire.' });
    if (req.method !== 'POST') return send(405, { error: 'method_not_allowed', message: 'Use POST.' }, { allow: 'POST' });
    let id: string;
    try {
      id = decodeURIComponent(m[1]);
    } catch {
      return send(404, ANSWERS.not_found);
    }
    try {
      const outcome = await this.expiry.expireWhenFinished(id, this.waitMs);
      if (outcome === 'expired') return send(204);
      const a = ANSWERS[outcome];
      send(a.status, { error: a.error, message: a.message });
    } catch (err) {
      this.logger.error({ msg: 'force-expire seam failed', runId: id, err });
      send(500, { error: 'internal_error', message: 'The run could not be expired.' });
    }
  }
}
