import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { Counter } from 'prom-client';
import { HOST_CONFIG, HostConfig, RateBudget, RateClass } from '../config/host-config';
import { DomainError } from '../errors/domain-error';
import { HealthService } from '../health/health.service';
import type { Principal } from '../identity/principal';
import { MetricsService } from '../metrics/metrics.service';
import { MemoryRateLimitStore, RateLimitStore } from './rate-limit-store';
import type { RedisRateLimitStore } from './redis-rate-limit-store';

/** The /readyz component that tells whether the shared store counts (listed only with OPENWOP_REDIS_URL). */
export const RATE_LIMIT_STORE_COMPONENT = 'rate-limit-store';

/** Who a budget belongs to: a credential (`key` in the protocol's 429 vocabulary) or a client address. */
export type RateSubjectKind = 'key' | 'address';

/** 429 `rate_limited` with `Retry-After` (seconds) and the details the protocol asks for. */
export class RateLimitedError extends DomainError {
  constructor(cls: RateClass, kind: RateSubjectKind, budget: RateBudget, retryAfterMs: number) {
    super(
      'rate_limited',
      429,
      kind === 'key' ? 'This credential is over its request budget; retry later.' : 'This client address is over its request budget; retry later.',
      { retryAfterMs, scope: kind === 'key' ? 'key' : 'global', class: cls, limit: budget.limit, windowMs: budget.windowMs },
      { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
    );
  }
}

/**
 * Fixed-window request budgets per route class: per credential for authenticated routes (`read`
 * for GET/HEAD, `write` otherwise), per client address for public routes and for refused
 * credentials (`auth-failures`). Windows are aligned on the wall clock, so a window's end (the
 * Retry-After) is the same for every subject.
 *
 * The counters are kept in a RateLimitStore: this replica's memory by default (with N replicas a
 * subject can use up to N budgets; no round trip on the request path), or, with OPENWOP_REDIS_URL, a
 * Redis server the replicas share (one budget across them). While the shared store does not answer,
 * requests are counted in this replica's memory again (RedisRateLimitStore): logged, and listed as
 * the degraded component `rate-limit-store` of /readyz, never a refusal of all traffic.
 */
@Injectable()
export class RateLimiterService implements OnModuleInit, OnModuleDestroy {
  private readonly store: RateLimitStore;
  /** The Redis store, when the shared store is configured (`store` then). */
  private readonly shared?: RedisRateLimitStore;
  private readonly refused: Counter<'class'>;
  private readonly logger = new Logger('rate-limit');
  /** The clock (ms since the epoch); tests replace it. */
  now: () => number = Date.now;

  constructor(
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    metrics: MetricsService,
    private readonly health: HealthService,
  ) {
    this.refused = metrics.counter({
      name: 'openwop_rate_limited_total',
      help: 'Requests refused with 429 rate_limited, by route class.',
      labelNames: ['class'],
    });
    const longestWindowMs = Math.max(...Object.values(config.rateLimit.budgets).map((b) => b.windowMs));
    const memory = new MemoryRateLimitStore(longestWindowMs, () => this.now());
    if (config.rateLimit.enabled && config.sharedStore.redisUrl) {
      // The Redis client (ioredis) is loaded only when the shared store is configured.
      const { RedisRateLimitStore: Store } = require('./redis-rate-limit-store') as typeof import('./redis-rate-limit-store');
      this.shared = new Store(config.sharedStore, memory, (shared, reason) => this.sharedStoreChanged(shared, reason));
    }
    this.store = this.shared ?? memory;
  }

  /** With a shared store, connects before the host serves (waiting a little; see RedisRateLimitStore.start). */
  async onModuleInit(): Promise<void> {
    if (this.shared) await this.shared.start(Math.max(1_000, this.config.sharedStore.timeoutMs * 4));
  }

  async onModuleDestroy(): Promise<void> {
    await this.store.close();
  }

  get enabled(): boolean {
    return this.config.rateLimit.enabled;
  }

  /** Where the counters are kept now: `memory` (the default), `redis`, or `memory-fallback` while the shared store does not answer. */
  get storeKind(): 'memory' | 'redis' | 'memory-fallback' {
    if (!this.shared) return 'memory';
    return this.shared.isShared ? 'redis' : 'memory-fallback';
  }

  /** The budget key of a verified credential: the API key, or the JWT's tenant and principal. */
  static credentialKey(p: Principal): string {
    return p.keyId ? `key:${p.keyId}` : `${p.kind}:${p.tenant}\u0000${p.principal}`;
  }

  /** Counts one request of `subject` in `cls`; throws RateLimitedError when it is over the budget. */
  async take(cls: RateClass, kind: RateSubjectKind, subject: string): Promise<void> {
    if (!this.enabled) return;
    const budget = this.config.rateLimit.budgets[cls];
    const start = this.windowStart(budget);
    const count = await this.store.hit(`${cls}\u0000${subject}`, start, budget.windowMs);
    if (count > budget.limit) this.refuse(cls, kind, budget, start);
  }

  /** Throws RateLimitedError when `subject` has no budget left in `cls`, without counting a request. */
  async check(cls: RateClass, kind: RateSubjectKind, subject: string): Promise<void> {
    if (!this.enabled) return;
    const budget = this.config.rateLimit.budgets[cls];
    const start = this.windowStart(budget);
    if ((await this.store.peek(`${cls}\u0000${subject}`, start)) >= budget.limit) this.refuse(cls, kind, budget, start);
  }

  private refuse(cls: RateClass, kind: RateSubjectKind, budget: RateBudget, windowStart: number): never {
    this.refused.inc({ class: cls });
    throw new RateLimitedError(cls, kind, budget, Math.max(1, windowStart + budget.windowMs - this.now()));
  }

  private windowStart(budget: RateBudget): number {
    const now = this.now();
    return now - (now % budget.windowMs);
  }

  private sharedStoreChanged(shared: boolean, reason?: string): void {
    if (shared) {
      this.logger.log('rate limits: counting in the shared Redis store (one budget across replicas)');
      this.health.report(RATE_LIMIT_STORE_COMPONENT, true, undefined, { store: 'redis' });
    } else {
      this.logger.warn({ msg: "rate limits: the shared Redis store does not answer; counting in this replica's memory until it does", reason: reason ?? 'unknown reason' });
      this.health.report(RATE_LIMIT_STORE_COMPONENT, false, 'The shared rate-limit store (Redis) does not answer: each replica counts its own budgets until it does.', { store: 'memory-fallback' });
    }
  }
}
