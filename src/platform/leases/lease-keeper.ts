import { InvariantViolation, WiringFault } from '../errors/internal-fault';
/**
 * Keeps the leases one owner holds in a shared store (rows with an owner and an expiry): renews them
 * together, and aborts the work of a lease as soon as it may no longer be held, so work never outlives
 * its lease while another replica takes the same key over.
 */

export type LeaseEndReason = 'lost' | 'expired' | 'shutdown' | 'released';

export interface LeaseStore<K extends string, T = void> {
  /** Extends the leases of `keys` held by `owner` for `leaseMs` in ONE round trip; answers the keys still held, each with what the renewal read (T). A key missing from the answer is lost. */
  renew(owner: string, keys: K[], leaseMs: number): Promise<Map<K, T>>;
  /** Hands leases back (shutdown, or work finished early). Best effort. */
  release?(owner: string, keys: K[]): Promise<void>;
}

export interface LeaseKeeperOptions<K extends string, T> {
  owner: string;
  leaseMs: number;
  /** Default: leaseMs / 3. */
  renewEveryMs?: number;
  store: LeaseStore<K, T>;
  log?: { warn(obj: { msg: string } & Record<string, unknown>): void };
}

export interface HeldLease<T> {
  readonly key: string;
  /** Aborted when the lease is lost (a renewal did not return the key, or renewals kept failing until the lease's own expiry passed), or when the keeper stops. */
  readonly signal: AbortSignal;
  /** Why the signal was aborted: 'lost' | 'expired' | 'shutdown' | 'released' (undefined while held). */
  readonly reason: LeaseEndReason | undefined;
  /**
   * For a lease that expired because this process stalled (its event loop blocked, so renewals could
   * not be sent or their answers read in time): how many ms the keeper's timer ran late. Undefined for
   * every other end, among them an expiry after renewals that were sent and failed (the store away).
   */
  readonly stalledMs: number | undefined;
  /** Stops renewing this key (the work is finished); does not call store.release unless asked. The signal then aborts with 'released' (nothing should act on the lease any more). */
  drop(opts?: { release?: boolean }): Promise<void>;
}

export interface HoldOptions<T> {
  /** Date.now() when the claim statement was sent (default: now). */
  claimedAtMs?: number;
  onRenewed?(info: T): void;
  /** false: never renewed, only its expiry is watched. */
  renew?: boolean;
}

/**
 * The abort reason of a lease's signal, so work that rethrows `signal.reason` says which lease ended
 * and why. It carries no stack: it is made for every lease that ends (each run's, when it finishes),
 * and where the keeper noticed it says nothing about the work.
 */
export class LeaseEndedError extends Error {
  constructor(
    readonly key: string,
    readonly reason: LeaseEndReason,
    readonly stalledMs?: number,
  ) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(`the lease on "${key}" ended: ${reason}${stalledMs === undefined ? '' : ` (the process stalled for ${stalledMs} ms)`}`);
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.name = 'LeaseEndedError';
  }
}

/**
 * The margin by which a lease is given up before its expiry: the store counts the expiry on its own
 * clock, from a moment somewhat after this process sent the statement, but the two clocks may tick
 * at slightly different rates.
 */
export function leaseSafetyMarginMs(leaseMs: number): number {
  return Math.min(leaseMs / 10, 5000);
}

/**
 * Expiries are tracked on the monotonic clock: a wall clock stepped back by NTP must not stretch a
 * lease, and a process that was suspended sees the time it lost.
 */
const monotonic = (): number => performance.now();

interface Entry<K extends string, T> {
  readonly lease: KeptLease<K, T>;
  readonly renew: boolean;
  /** Monotonic instant from which the lease may no longer be held. */
  deadline: number;
  readonly onRenewed?: (info: T) => void;
}

class KeptLease<K extends string, T> implements HeldLease<T> {
  private readonly controller = new AbortController();
  private ended?: LeaseEndReason;
  private stalled?: number;

  constructor(
    readonly key: K,
    private readonly keeper: LeaseKeeper<K, T>,
  ) {}

  // Reading the signal first checks the expiry: a process that stalled past the lease (a long GC, a
  // suspended VM) must see the abort at its next check, before the keeper's timer gets a turn.
  get signal(): AbortSignal {
    this.keeper.checkExpiry(this);
    return this.controller.signal;
  }

  get reason(): LeaseEndReason | undefined {
    this.keeper.checkExpiry(this);
    return this.ended;
  }

  get stalledMs(): number | undefined {
    this.keeper.checkExpiry(this);
    return this.stalled;
  }

  drop(opts: { release?: boolean } = {}): Promise<void> {
    return this.keeper.dropLease(this, opts.release === true);
  }

  end(reason: LeaseEndReason, stalledMs?: number): void {
    if (this.ended) return;
    this.ended = reason;
    this.stalled = stalledMs;
    this.controller.abort(new LeaseEndedError(this.key, reason, stalledMs));
  }
}

/**
 * Holds leases for one owner. One timer per keeper, armed for the earliest of the next renewal and
 * the nearest expiry; every `renewEveryMs` one `store.renew` call for every key that renews. A
 * renewal that fails leaves the leases as they were: each is aborted ('expired') once its own expiry
 * passes, counted conservatively from the moment the claim or the last successful renewal was sent.
 * A lease that expires while the timer runs later than a renewal interval expired because the process
 * stalled, not because the store was away: it says so (`stalledMs`, and one warning).
 */
export class LeaseKeeper<K extends string, T = void> {
  readonly owner: string;
  private readonly leaseMs: number;
  private readonly renewEveryMs: number;
  private readonly marginMs: number;
  private readonly store: LeaseStore<K, T>;
  private readonly log?: { warn(obj: { msg: string } & Record<string, unknown>): void };
  private readonly held = new Map<K, Entry<K, T>>();
  private timer?: NodeJS.Timeout;
  /** Monotonic instant the armed timer is due (a timer that has not run by then is late: the event loop was blocked). */
  private timerDueAt?: number;
  private renewing = false;
  private nextRenewAt?: number;
  private stopped = false;
  private stopping?: Promise<void>;

  constructor(opts: LeaseKeeperOptions<K, T>) {
    this.owner = opts.owner;
    this.leaseMs = opts.leaseMs;
    this.marginMs = leaseSafetyMarginMs(opts.leaseMs);
    this.renewEveryMs = opts.renewEveryMs ?? opts.leaseMs / 3;
    this.store = opts.store;
    this.log = opts.log;
    if (!(this.leaseMs > 0)) throw new WiringFault(`leaseMs must be positive (got ${opts.leaseMs})`);
    if (!(this.renewEveryMs > 0) || this.renewEveryMs >= this.leaseMs - this.marginMs) {
      throw new WiringFault(`renewEveryMs (${this.renewEveryMs}) must be positive and shorter than the lease less its safety margin (${this.leaseMs - this.marginMs} ms)`);
    }
  }

  /**
   * Starts keeping a lease the caller has just claimed (claimedAtMs: Date.now() when the claim
   * statement was sent; the keeper counts the expiry from then, conservatively). onRenewed gets T
   * after each successful renewal of this key. renew: false = never renewed, only its expiry is
   * watched (the signal aborts with 'expired' at claimedAtMs + leaseMs, minus a safety margin).
   * A key is held once at a time; after stop() the answer is a lease already ended ('shutdown').
   */
  hold(key: K, opts: HoldOptions<T> = {}): HeldLease<T> {
    const lease = new KeptLease<K, T>(key, this);
    if (this.stopped) {
      lease.end('shutdown');
      return lease;
    }
    if (this.held.has(key)) throw new InvariantViolation(`the lease on "${key}" is already held by ${this.owner}`);
    const age = Math.max(0, Date.now() - (opts.claimedAtMs ?? Date.now()));
    const entry: Entry<K, T> = { lease, renew: opts.renew !== false, deadline: monotonic() - age + this.leaseMs - this.marginMs, onRenewed: opts.onRenewed };
    this.held.set(key, entry);
    if (entry.renew && this.nextRenewAt === undefined) this.nextRenewAt = monotonic() + this.renewEveryMs;
    this.schedule();
    return lease;
  }

  /** How many leases are held. */
  get size(): number {
    return this.held.size;
  }

  /**
   * Aborts every held lease with 'shutdown', stops the timer, and releases them all through
   * store.release (one call). Every call answers the same promise: a second caller (a shutdown run
   * twice) waits for that release instead of going on, say, to close the store under it.
   */
  stop(): Promise<void> {
    return (this.stopping ??= this.stopOnce());
  }

  private async stopOnce(): Promise<void> {
    this.stopped = true;
    this.clearTimer();
    const entries = [...this.held.values()];
    this.held.clear();
    this.nextRenewAt = undefined;
    for (const e of entries) e.lease.end('shutdown');
    if (entries.length) await this.release(entries.map((e) => e.lease.key));
  }

  /** @internal Ends `lease` if its expiry has passed (see KeptLease.signal). */
  checkExpiry(lease: KeptLease<K, T>): void {
    const entry = this.held.get(lease.key);
    const now = monotonic();
    if (entry?.lease !== lease || now < entry.deadline) return;
    this.expireDue(now, this.timerDueAt);
    this.schedule();
  }

  /** @internal */
  async dropLease(lease: KeptLease<K, T>, release: boolean): Promise<void> {
    const entry = this.held.get(lease.key);
    if (entry?.lease !== lease) return;
    this.end(entry, 'released');
    this.schedule();
    if (release) await this.release([lease.key]);
  }

  private end(entry: Entry<K, T>, reason: LeaseEndReason, stalledMs?: number): void {
    if (this.held.get(entry.lease.key) === entry) this.held.delete(entry.lease.key);
    entry.lease.end(reason, stalledMs);
  }

  private async release(keys: K[]): Promise<void> {
    if (!this.store.release) return;
    try {
      await this.store.release(this.owner, keys);
    } catch (e) {
      // Best effort: an unreleased lease simply expires.
      this.log?.warn({ msg: 'releasing leases failed; they expire instead', owner: this.owner, keys, err: (e as Error)?.message });
    }
  }

  /** Re-arms the one timer for the earliest thing due: an expiry, or the next renewal unless one is in flight. */
  private schedule(): void {
    this.clearTimer();
    if (this.stopped || !this.held.size) {
      this.nextRenewAt = undefined;
      return;
    }
    let at = Infinity;
    let renews = false;
    for (const e of this.held.values()) {
      at = Math.min(at, e.deadline);
      renews ||= e.renew;
    }
    if (!renews) this.nextRenewAt = undefined;
    else if (!this.renewing && this.nextRenewAt !== undefined) at = Math.min(at, this.nextRenewAt);
    const now = monotonic();
    this.timerDueAt = Math.max(now, at);
    this.timer = setTimeout(() => this.onTimer(), Math.max(0, Math.ceil(at - now)));
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerDueAt = undefined;
  }

  private onTimer(): void {
    const dueAt = this.timerDueAt;
    this.timer = undefined;
    this.timerDueAt = undefined;
    const now = monotonic();
    this.expireDue(now, dueAt);
    if (!this.renewing && this.nextRenewAt !== undefined && now >= this.nextRenewAt) this.renewAll(now);
    this.schedule();
  }

  /**
   * Ends every lease whose expiry has passed. When the timer due at `dueAt` has run (or is still
   * waiting to run) later than a renewal interval, the process stalled: the renewals that would have
   * kept these leases could not be sent in time, so the leases say so and one warning is logged.
   */
  private expireDue(now: number, dueAt: number | undefined): void {
    const late = dueAt === undefined ? 0 : now - dueAt;
    const stalledMs = late >= this.renewEveryMs ? Math.round(late) : undefined;
    const due = [...this.held.values()].filter((e) => now >= e.deadline);
    for (const e of due) this.end(e, 'expired', stalledMs);
    if (due.length && stalledMs !== undefined) {
      this.log?.warn({ msg: 'the process stalled (its event loop was blocked): leases expired before they could be renewed', owner: this.owner, keys: due.length, stalledMs });
    }
  }

  private renewAll(sentAt: number): void {
    const batch = [...this.held.values()].filter((e) => e.renew);
    this.nextRenewAt = sentAt + this.renewEveryMs;
    if (!batch.length) return;
    this.renewing = true;
    let answer: Promise<Map<K, T>>;
    try {
      answer = this.store.renew(this.owner, batch.map((e) => e.lease.key), this.leaseMs);
    } catch (e) {
      answer = Promise.reject(e);
    }
    answer
      .then(
        (kept) => this.renewed(batch, kept, sentAt),
        (e: unknown) => this.log?.warn({ msg: 'lease renewal failed; the leases are kept until they expire', owner: this.owner, keys: batch.length, err: (e as Error)?.message }),
      )
      .finally(() => {
        this.renewing = false;
        if (this.stopped) return;
        this.expireDue(monotonic(), this.timerDueAt);
        this.schedule();
      });
  }

  private renewed(batch: Array<Entry<K, T>>, kept: Map<K, T>, sentAt: number): void {
    // Only the entries this renewal was sent for: one dropped meanwhile is gone, and a key held after
    // it was sent (a new entry, even under the same key) was not part of what the store answered.
    for (const e of batch) {
      if (this.held.get(e.lease.key) !== e) continue;
      if (!kept.has(e.lease.key)) {
        this.end(e, 'lost');
        continue;
      }
      e.deadline = Math.max(e.deadline, sentAt + this.leaseMs - this.marginMs);
      if (!e.onRenewed) continue;
      try {
        e.onRenewed(kept.get(e.lease.key) as T);
      } catch (err) {
        this.log?.warn({ msg: 'a lease renewal callback failed', owner: this.owner, key: e.lease.key, err: (err as Error)?.message });
      }
    }
  }
}
