/**
 * Where the rate limiter keeps its fixed-window counters. A counter is named by its route class and
 * subject (`key`) and by the start of its window (ms since the epoch, aligned on the wall clock), so a
 * new window is a new counter and an old one only has to be forgotten.
 */
export interface RateLimitStore {
  /** Counts one request under `key` in the window starting at `windowStart`; answers the count including it. */
  hit(key: string, windowStart: number, windowMs: number): Promise<number>;
  /** The count under `key` in the window starting at `windowStart`, without counting. */
  peek(key: string, windowStart: number): Promise<number>;
  /** Releases connections (the host is stopping). */
  close(): Promise<void>;
}

interface Window {
  start: number;
  count: number;
}

/** Past this many live counters, expired ones are swept before a new one is added. */
const SWEEP_AT = 10_000;

/**
 * The default store: counters in this replica's memory (with N replicas a subject can use up to N
 * budgets). Memory stays bounded by the subjects active in one window: past SWEEP_AT counters, those
 * whose window has ended are dropped before a new one is added. Also the fallback of the shared store
 * while Redis does not answer.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly windows = new Map<string, Window>();

  /** `longestWindowMs`: the longest budget window (a counter older than it is over); `now`: the limiter's clock. */
  constructor(
    private readonly longestWindowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Synchronous: the limiter's default path costs no round trip. */
  count(key: string, windowStart: number): number {
    let w = this.windows.get(key);
    if (!w) {
      if (this.windows.size >= SWEEP_AT) this.sweep();
      w = { start: windowStart, count: 0 };
      this.windows.set(key, w);
    } else if (w.start !== windowStart) {
      w.start = windowStart;
      w.count = 0;
    }
    return ++w.count;
  }

  current(key: string, windowStart: number): number {
    const w = this.windows.get(key);
    return w && w.start === windowStart ? w.count : 0;
  }

  async hit(key: string, windowStart: number): Promise<number> {
    return this.count(key, windowStart);
  }

  async peek(key: string, windowStart: number): Promise<number> {
    return this.current(key, windowStart);
  }

  async close(): Promise<void> {
    this.windows.clear();
  }

  get size(): number {
    return this.windows.size;
  }

  private sweep(): void {
    const horizon = this.now() - this.longestWindowMs;
    for (const [k, w] of this.windows) if (w.start < horizon) this.windows.delete(k);
  }
}
