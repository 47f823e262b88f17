import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Client, ClientConfig } from 'pg';
import { DataSource } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { ApiKeyService, KEY_REVOKED_CHANNEL } from './api-key.service';

/** How long the listener waits for its own probe notification before deciding notifications do not arrive. */
const PROBE_TIMEOUT_MS = 2_000;
/** After the listener connection is lost, how long before it is opened again. */
const RELISTEN_MS = 5_000;

/**
 * Carries a key revocation to this replica's verification cache, whoever revoked it (another
 * replica, the CLI):
 *
 * - **notifications**: a dedicated connection LISTENs on the revocation channel, on which every revoke
 *   notifies the key's lookup id in its own transaction; the cache drops the key the moment the
 *   revocation commits. Used once a probe notification has made the round trip, so a database that
 *   accepts LISTEN but never delivers (the embedded engine's socket server hands a notification to
 *   the connection that sent it, not to the listener) is not trusted blindly.
 * - **polling** otherwise (the embedded engine; a server while the listener is down): every
 *   `OPENWOP_KEY_REVOCATION_POLL_MS` the replica reads the keys revoked recently (an index on
 *   `revoked_at`) and drops them. A poll gap longer than the look-back window drops the whole cache.
 *
 * The verification cache's own expiry (ApiKeyService.CACHE_MS) stays the last resort.
 */
@Injectable()
export class KeyRevocationWatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('identity.revocation');
  private listener?: Client;
  private live = false;
  private stopped = false;
  private pollTimer?: NodeJS.Timeout;
  private relistenTimer?: NodeJS.Timeout;
  private polling?: Promise<void>;
  private lastPollOk = 0;
  private readonly probes = new Map<string, (arrived: boolean) => void>();
  private listening?: Promise<void>;

  constructor(
    private readonly ds: DataSource,
    private readonly keys: ApiKeyService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  /** `notify` while revocations arrive as notifications, else `poll`. */
  get mode(): 'notify' | 'poll' {
    return this.live ? 'notify' : 'poll';
  }

  /** The look-back of one poll: several intervals, so a slow commit or a skipped tick is still seen. */
  private get windowMs(): number {
    return Math.max(10_000, 5 * this.config.keyRevocationPollMs);
  }

  onApplicationBootstrap(): void {
    this.lastPollOk = Date.now();
    this.pollTimer = setInterval(() => void this.pollOnce(), this.config.keyRevocationPollMs);
    this.pollTimer.unref();
    this.listening = this.listen();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.relistenTimer) clearTimeout(this.relistenTimer);
    for (const settle of this.probes.values()) settle(false);
    await this.listening?.catch(() => undefined);
    await this.polling?.catch(() => undefined);
    await this.closeListener();
  }

  /** One poll (skipped while notifications are live). Exposed for tests. */
  async pollOnce(): Promise<void> {
    if (this.live || this.stopped || this.polling) return this.polling;
    this.polling = (async () => {
      try {
        const rows = (await this.ds.query(`SELECT "lookup_id" FROM "api_key" WHERE "revoked_at" > now() - ($1::int * interval '1 millisecond')`, [this.windowMs])) as Array<{ lookup_id: string }>;
        const now = Date.now();
        // Revocations older than the window may have been missed while polls failed: forget everything.
        if (now - this.lastPollOk > this.windowMs) this.keys.forgetAll();
        for (const r of rows) this.keys.forget(r.lookup_id);
        this.lastPollOk = now;
      } catch (e) {
        this.log.warn({ msg: 'could not read recent key revocations', err: (e as Error).message });
      } finally {
        this.polling = undefined;
      }
    })();
    return this.polling;
  }

  private async listen(): Promise<void> {
    if (this.stopped) return;
    const client = new Client(this.connectionConfig());
    client.on('error', (e) => this.lost(client, e));
    client.on('end', () => this.lost(client));
    client.on('notification', (n) => {
      if (n.channel !== KEY_REVOKED_CHANNEL || !n.payload) return;
      const probe = this.probes.get(n.payload);
      if (probe) probe(true);
      else this.keys.forget(n.payload);
    });
    try {
      await client.connect();
      if (this.stopped) {
        await client.end().catch(() => undefined);
        return;
      }
      this.listener = client;
      await client.query(`LISTEN "${KEY_REVOKED_CHANNEL}"`);
      const token = `probe:${randomUUID()}`;
      const arrived = new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS);
        timer.unref();
        this.probes.set(token, (ok) => {
          clearTimeout(timer);
          resolve(ok);
        });
      });
      // Sent through another connection, as a revoke on another replica would be.
      await this.ds.query(`SELECT pg_notify($1, $2)`, [KEY_REVOKED_CHANNEL, token]);
      const ok = await arrived;
      this.probes.delete(token);
      if (this.stopped || this.listener !== client) return;
      if (!ok) {
        this.log.log('the database does not deliver notifications to a listening connection: key revocations are polled');
        await this.closeListener();
        return;
      }
      this.live = true;
      // Anything revoked between the last poll and now was not announced to this listener.
      this.keys.forgetAll();
      this.log.debug('key revocations arrive as notifications');
    } catch (e) {
      this.lost(client, e as Error);
    }
  }

  private lost(client: Client, e?: Error): void {
    if (this.listener !== client) return;
    this.listener = undefined;
    this.live = false;
    void client.end().catch(() => undefined);
    if (this.stopped) return;
    this.log.warn({ msg: 'key revocation listener lost; polling until it is back', err: e?.message });
    this.relistenTimer = setTimeout(() => {
      this.listening = this.listen();
    }, RELISTEN_MS);
    this.relistenTimer.unref();
  }

  private async closeListener(): Promise<void> {
    const client = this.listener;
    this.listener = undefined;
    this.live = false;
    if (!client) return;
    await client.query(`UNLISTEN "${KEY_REVOKED_CHANNEL}"`).catch(() => undefined);
    await client.end().catch(() => undefined);
  }

  /** The same database the data source uses, on a connection of its own (a pool connection cannot hold LISTEN). */
  private connectionConfig(): ClientConfig {
    const o = this.ds.options as { url?: string; host?: string; port?: number; username?: string; password?: string; database?: string };
    const base: ClientConfig = o.url ? { connectionString: o.url } : { host: o.host, port: o.port, user: o.username, password: o.password, database: o.database };
    return { ...base, connectionTimeoutMillis: 10_000, application_name: 'openwop-key-revocations' };
  }
}
