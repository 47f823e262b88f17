import Redis from 'ioredis';
import type { SharedStoreConfig } from '../config/shared-store-settings';
import { MemoryRateLimitStore, RateLimitStore } from './rate-limit-store';
import { WiringFault } from '../errors/internal-fault';

/** Told when the shared counters become usable (`true`) or unusable (`false`, with the reason), once per change. */
export type SharedStoreListener = (shared: boolean, reason?: string) => void;

/** A counter outlives its window by this much, against clocks of replicas a little apart. */
const EXPIRY_SLACK_MS = 5_000;

/**
 * One atomic step per request: count it, and give a new counter its expiry. The key names the
 * window's start, so a counter is never reset, only forgotten when its window is over.
 */
const HIT_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

interface HitCommand {
  openwopRateHit(key: string, ttlMs: number): Promise<number>;
}

/**
 * Counters in a Redis server all replicas share, so a subject has one budget across them.
 *
 * Fail-safe: while Redis does not answer (not connected, an error, or slower than
 * OPENWOP_REDIS_TIMEOUT_MS), a request is counted in this replica's memory instead (`fallback`),
 * that is per replica as without a shared store: never refused because the store is down, never
 * let through uncounted. Requests are not queued for a connection that is down (they would wait on
 * the request path): the client reconnects in the background, and the first answer from Redis
 * switches back. The listener hears each change (the limiter logs it and reports it to /readyz).
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly redis: Redis & HitCommand;
  private readonly prefix: string;
  /** undefined until the first answer or failure, so that the first state is told too. */
  private shared: boolean | undefined;
  private closed = false;

  constructor(
    config: SharedStoreConfig,
    private readonly fallback: MemoryRateLimitStore,
    private readonly listener: SharedStoreListener,
  ) {
    if (!config.redisUrl) throw new WiringFault('RedisRateLimitStore needs OPENWOP_REDIS_URL');
    this.prefix = `${config.keyPrefix}rl:`;
    this.redis = new Redis(config.redisUrl, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: config.timeoutMs,
      connectTimeout: Math.max(1_000, config.timeoutMs * 4),
      retryStrategy: (times) => Math.min(100 * times, 2_000),
      // On close, a connection the server does not end is destroyed after this long.
      disconnectTimeout: config.timeoutMs,
      // The connection name shows in CLIENT LIST.
      connectionName: 'openwop-host',
    }) as Redis & HitCommand;
    this.redis.defineCommand('openwopRateHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    this.redis.on('ready', () => this.state(true));
    this.redis.on('error', (e: Error) => this.state(false, e.message));
    this.redis.on('close', () => this.state(false, 'the connection to Redis closed'));
  }

  /** Whether requests are counted in Redis now (false: in this replica's memory). */
  get isShared(): boolean {
    return this.shared === true;
  }

  /** Connects, waiting at most `waitMs`; a Redis that is not there yet only means counting per replica until it is. */
  async start(waitMs: number): Promise<void> {
    const connected = this.redis.connect().then(
      () => true,
      (e: Error) => (this.state(false, e.message), false),
    );
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), waitMs)));
    const ok = await Promise.race([connected, late]).finally(() => clearTimeout(timer));
    if (!ok && this.shared !== true) this.state(false, `Redis did not answer within ${waitMs} ms of the start`);
  }

  async hit(key: string, windowStart: number, windowMs: number): Promise<number> {
    if (this.redis.status === 'ready') {
      try {
        const n = Number(await this.redis.openwopRateHit(this.key(key, windowStart), windowMs + EXPIRY_SLACK_MS));
        this.state(true);
        return n;
      } catch (e) {
        this.state(false, (e as Error).message);
      }
    }
    return this.fallback.count(key, windowStart);
  }

  async peek(key: string, windowStart: number): Promise<number> {
    if (this.redis.status === 'ready') {
      try {
        const v = await this.redis.get(this.key(key, windowStart));
        this.state(true);
        return v === null ? 0 : Number(v);
      } catch (e) {
        this.state(false, (e as Error).message);
      }
    }
    return this.fallback.current(key, windowStart);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.redis.disconnect();
    await this.fallback.close();
  }

  private key(key: string, windowStart: number): string {
    return `${this.prefix}${windowStart}:${key}`;
  }

  private state(shared: boolean, reason?: string): void {
    if (this.closed || shared === this.shared) return;
    this.shared = shared;
    this.listener(shared, reason);
  }
}
