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
 *   revocation commits, and cached keys are otherwise trusted for ApiKeyService.CACHE_MS. Used once a
 *   probe notification has made the round trip, so a database that accepts LISTEN but never delivers
 *   (the embedded engine's socket server hands a notification to the connection that sent it, not to
 *   the listener) is not trusted blindly.
 * - **recheck** otherwise (the embedded engine; a server while the listener is down): a cached key is
 *   read again once it is older than `OPENWOP_KEY_RECHECK_MS`, so a revocation is seen within that
 *   interval, at the cost of at most one indexed read per key and interval, only for keys in use
 *   (nothing runs in the background).
 */
@Injectable()
export class KeyRevocationWatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('identity.revocation');
  private listener?: Client;
  private live = false;
  private stopped = false;
  private relistenTimer?: NodeJS.Timeout;
  private readonly probes = new Map<string, (arrived: boolean) => void>();
  private listening?: Promise<void>;

  constructor(
    private readonly ds: DataSource,
    private readonly keys: ApiKeyService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  /** `notify` while revocations arrive as notifications, else `recheck`. */
  get mode(): 'notify' | 'recheck' {
    return this.live ? 'notify' : 'recheck';
  }

  onApplicationBootstrap(): void {
    this.setLive(false);
    this.listening = this.listen();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.relistenTimer) clearTimeout(this.relistenTimer);
    for (const settle of this.probes.values()) settle(false);
    await this.listening?.catch(() => undefined);
    await this.closeListener();
  }

  /** Notifications live: cached keys last the cache's full expiry; else they are re-read after the recheck interval. */
  private setLive(live: boolean): void {
    this.live = live;
    this.keys.cacheMs = live ? ApiKeyService.CACHE_MS : Math.min(ApiKeyService.CACHE_MS, this.config.keyRecheckMs);
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
        this.log.log('the database does not deliver notifications to a listening connection: cached keys are re-read every OPENWOP_KEY_RECHECK_MS');
        await this.closeListener();
        return;
      }
      this.setLive(true);
      // Anything revoked before the listener was up was not announced to it.
      this.keys.forgetAll();
      this.log.debug('key revocations arrive as notifications');
    } catch (e) {
      this.lost(client, e as Error);
    }
  }

  private lost(client: Client, e?: Error): void {
    if (this.listener !== client) return;
    this.listener = undefined;
    this.setLive(false);
    void client.end().catch(() => undefined);
    if (this.stopped) return;
    this.log.warn({ msg: 'key revocation listener lost; cached keys are re-read until it is back', err: e?.message });
    this.relistenTimer = setTimeout(() => {
      this.listening = this.listen();
    }, RELISTEN_MS);
    this.relistenTimer.unref();
  }

  private async closeListener(): Promise<void> {
    const client = this.listener;
    this.listener = undefined;
    if (!this.stopped) this.setLive(false);
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
