import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Client, ClientConfig } from 'pg';
import { pg } from './database-driver';
import { DataSource } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../config/host-config';

/** New work another replica may claim (a run nobody holds: created at full capacity, handed back, released). */
export const RUNS_CHANNEL = 'openwop_runs';
/** Events were appended to a run that a replica not executing it follows (payload: the run id). */
export const EVENTS_CHANNEL = 'openwop_events';
/** The channel this listener probes itself on. */
const PROBE_CHANNEL = 'openwop_probe';
const PROBE_TIMEOUT_MS = 2_000;
const RELISTEN_MS = 5_000;

type Handler = (payload: string | undefined) => void;

/**
 * PostgreSQL notifications between replicas, as a wake-up only, never as the source of truth: the
 * process's one LISTEN connection, shared by every listener (the run engine, the event followers,
 * the key revocation watcher): a dedicated connection LISTENs on the channels subscribers name, and a subscriber is called for each
 * notification, and once more (payload undefined) every time the listener (re)connects, since what
 * was notified while it was down was lost. Every subscriber keeps its own polling, which remains the
 * bound when notifications do not arrive.
 *
 * Used only once a probe notification sent through the data source's pool made the round trip to
 * the listener: the embedded engine's socket server hands a notification to the connection that sent
 * it, not to the listener, so there (and while a server's listener is down) `live` is false and the
 * subscribers poll as before.
 */
@Injectable()
export class DatabaseNotifications implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('database.notifications');
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly liveWatchers = new Set<(live: boolean) => void>();
  private listener?: Client;
  private stopped = false;
  private relistenTimer?: NodeJS.Timeout;
  private listening?: Promise<void>;
  private probe?: { token: string; settle: (ok: boolean) => void };
  /** Notifications arrive (the probe made the round trip on the current connection). */
  live = false;

  constructor(
    private readonly ds: DataSource,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  /** Calls `handler` for every notification on `channel` (and with undefined after each (re)connect). */
  subscribe(channel: string, handler: Handler): () => void {
    const set = this.handlers.get(channel) ?? new Set<Handler>();
    this.handlers.set(channel, set);
    set.add(handler);
    if (this.listener && this.live) void this.listener.query(`LISTEN "${channel}"`).catch(() => undefined);
    return () => set.delete(handler);
  }

  /**
   * Calls `watcher` whenever notifications start arriving (true: after the subscribers' calls of a
   * (re)connect) or stop (false: the listener was lost). Subscribers that trust notifications more
   * than their polling (the key revocation watcher) follow `live` with it.
   */
  watchLive(watcher: (live: boolean) => void): () => void {
    this.liveWatchers.add(watcher);
    return () => this.liveWatchers.delete(watcher);
  }

  private announce(live: boolean): void {
    for (const w of [...this.liveWatchers]) {
      try {
        w(live);
      } catch (e) {
        this.log.warn({ msg: 'a notification liveness watcher failed', err: (e as Error).message });
      }
    }
  }

  onApplicationBootstrap(): void {
    // The embedded engine cannot deliver to another connection: do not even try.
    if (!this.config.databaseUrl) return;
    this.listening = this.listen();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.relistenTimer) clearTimeout(this.relistenTimer);
    this.probe?.settle(false);
    await this.listening?.catch(() => undefined);
    const client = this.listener;
    this.listener = undefined;
    this.live = false;
    await client?.end().catch(() => undefined);
  }

  private async listen(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client(this.connectionConfig());
    client.on('error', (e) => this.lost(client, e));
    client.on('end', () => this.lost(client));
    client.on('notification', (n) => {
      if (n.channel === PROBE_CHANNEL) {
        if (this.probe && n.payload === this.probe.token) this.probe.settle(true);
        return;
      }
      for (const h of this.handlers.get(n.channel) ?? []) this.call(h, n.payload || undefined);
    });
    try {
      await client.connect();
      if (this.stopped) {
        await client.end().catch(() => undefined);
        return;
      }
      this.listener = client;
      await client.query(`LISTEN "${PROBE_CHANNEL}"`);
      const token = randomUUID();
      const arrived = new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS);
        timer.unref();
        this.probe = {
          token,
          settle: (ok) => {
            clearTimeout(timer);
            resolve(ok);
          },
        };
      });
      await this.ds.query(`SELECT pg_notify($1, $2)`, [PROBE_CHANNEL, token]);
      const ok = await arrived;
      this.probe = undefined;
      if (this.stopped || this.listener !== client) return;
      if (!ok) {
        this.log.log('the database does not deliver notifications to a listening connection: replicas find new work by polling');
        this.listener = undefined;
        await client.end().catch(() => undefined);
        return;
      }
      for (const channel of this.handlers.keys()) await client.query(`LISTEN "${channel}"`);
      this.live = true;
      // Whatever was notified before the listener was up (or while it was down) was not heard.
      for (const set of this.handlers.values()) for (const h of set) this.call(h, undefined);
      this.announce(true);
    } catch (e) {
      this.lost(client, e as Error);
    }
  }

  private call(h: Handler, payload: string | undefined): void {
    try {
      h(payload);
    } catch (e) {
      this.log.warn({ msg: 'a notification subscriber failed', err: (e as Error).message });
    }
  }

  private lost(client: Client, e?: Error): void {
    if (this.listener !== client) return;
    this.listener = undefined;
    const was = this.live;
    this.live = false;
    if (was) this.announce(false);
    void client.end().catch(() => undefined);
    if (this.stopped) return;
    this.log.warn({ msg: 'notification listener lost; replicas poll until it is back', err: e?.message });
    this.relistenTimer = setTimeout(() => {
      this.listening = this.listen();
    }, RELISTEN_MS);
    this.relistenTimer.unref();
  }

  /** The same database the data source uses, on a connection of its own (a pool connection cannot hold LISTEN). */
  private connectionConfig(): ClientConfig {
    const o = this.ds.options as { url?: string; host?: string; port?: number; username?: string; password?: string; database?: string };
    const base: ClientConfig = o.url ? { connectionString: o.url } : { host: o.host, port: o.port, user: o.username, password: o.password, database: o.database };
    return { ...base, connectionTimeoutMillis: 10_000, application_name: 'openwop-notifications' };
  }
}
