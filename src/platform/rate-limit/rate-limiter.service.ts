import { Inject, Injectable } from '@nestjs/common';
import type { Counter } from 'prom-client';
import { HOST_CONFIG, HostConfig, RateBudget, RateClass } from '../config/host-config';
import { DomainError } from '../errors/domain-error';
import type { Principal } from '../identity/principal';
import { MetricsService } from '../metrics/metrics.service';

/** Who a budget belongs to: a credential (`key` in the protocol's 429 vocabulary) or a client address. */
export type RateSubjectKind = 'key' | 'address';

interface Window {
  start: number;
  count: number;
}

/** Past this many live counters, expired ones are swept before a new one is added. */
const SWEEP_AT = 10_000;

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
 * Fixed-window request budgets per route class, counted in this replica's memory: per credential for
 * authenticated routes (`read` for GET/HEAD, `write` otherwise), per client address for public
 * routes and for refused credentials (`auth-failures`). Windows are aligned on the wall clock, so a
 * window's end (the Retry-After) is the same for every subject.
 *
 * Per replica on purpose: a shared counter would cost a database round trip on every request, on
 * the one component the limits exist to protect; with N replicas a subject can use up to N budgets.
 */
@Injectable()
export class RateLimiterService {
  private readonly windows = new Map<string, Window>();
  private readonly refused: Counter<'class'>;
  private readonly longestWindowMs: number;
  /** The clock (ms since the epoch); tests replace it. */
  now: () => number = Date.now;

  constructor(
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    metrics: MetricsService,
  ) {
    this.refused = metrics.counter({
      name: 'openwop_rate_limited_total',
      help: 'Requests refused with 429 rate_limited, by route class.',
      labelNames: ['class'],
    });
    this.longestWindowMs = Math.max(...Object.values(config.rateLimit.budgets).map((b) => b.windowMs));
  }

  get enabled(): boolean {
    return this.config.rateLimit.enabled;
  }

  /** The budget key of a verified credential: the API key, or the JWT's tenant and principal. */
  static credentialKey(p: Principal): string {
    return p.keyId ? `key:${p.keyId}` : `${p.kind}:${p.tenant}\u0000${p.principal}`;
  }

  /** Counts one request of `subject` in `cls`; throws RateLimitedError when it is over the budget. */
  take(cls: RateClass, kind: RateSubjectKind, subject: string): void {
    if (!this.enabled) return;
    const budget = this.config.rateLimit.budgets[cls];
    const w = this.window(cls, subject, budget);
    if (w.count >= budget.limit) this.refuse(cls, kind, budget, w);
    w.count++;
  }

  /** Throws RateLimitedError when `subject` has no budget left in `cls`, without counting a request. */
  check(cls: RateClass, kind: RateSubjectKind, subject: string): void {
    if (!this.enabled) return;
    const budget = this.config.rateLimit.budgets[cls];
    const w = this.windows.get(`${cls}\u0000${subject}`);
    if (w && w.start === this.windowStart(budget) && w.count >= budget.limit) this.refuse(cls, kind, budget, w);
  }

  private refuse(cls: RateClass, kind: RateSubjectKind, budget: RateBudget, w: Window): never {
    this.refused.inc({ class: cls });
    throw new RateLimitedError(cls, kind, budget, Math.max(1, w.start + budget.windowMs - this.now()));
  }

  private windowStart(budget: RateBudget): number {
    const now = this.now();
    return now - (now % budget.windowMs);
  }

  private window(cls: RateClass, subject: string, budget: RateBudget): Window {
    const key = `${cls}\u0000${subject}`;
    const start = this.windowStart(budget);
    let w = this.windows.get(key);
    if (!w) {
      if (this.windows.size >= SWEEP_AT) this.sweep();
      w = { start, count: 0 };
      this.windows.set(key, w);
    } else if (w.start !== start) {
      w.start = start;
      w.count = 0;
    }
    return w;
  }

  /** Drops counters whose window has ended (memory stays bounded by the subjects active in one window). */
  private sweep(): void {
    const horizon = this.now() - this.longestWindowMs;
    for (const [k, w] of this.windows) if (w.start < horizon) this.windows.delete(k);
  }
}
