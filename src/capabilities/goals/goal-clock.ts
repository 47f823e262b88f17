import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

export type ClockSource = () => Promise<Date> | Date;

/** A claim this replica took at a goal-clock instant, for a duration. */
export interface GoalLease {
  /** Whether the claim still holds (with a safety margin), judged without a database round trip. */
  held(): Promise<boolean>;
}

/**
 * The one clock of standing goals: creation times, deadlines, schedule slots and lease expiries are
 * all computed from it and compared in SQL against the timestamp it returned (never against the
 * database's own now()), so replicas agree and tests can move time. Production reads the database
 * clock (shared by every replica, unaffected by a replica's clock skew); tests replace the source.
 */
@Injectable()
export class GoalClock {
  private source?: ClockSource;

  constructor(private readonly ds: DataSource) {}

  async now(): Promise<Date> {
    if (this.source) return new Date((await this.source()).getTime());
    const rows = (await this.ds.query('SELECT clock_timestamp() AS now')) as Array<{ now: Date }>;
    return new Date(rows[0].now);
  }

  /**
   * A lease taken at `at` (a reading of this clock) for `ms`. On the database clock its age is
   * measured with this process's monotonic clock (no round trip; a stalled or suspended process
   * sees the time it lost), and it is treated as expired a margin (a tenth, at most 5 s) early, for
   * clock-rate drift. With a replaced source, that source is read.
   */
  lease(at: Date, ms: number): GoalLease {
    const expires = at.getTime() + ms;
    const source = this.source;
    if (source) return { held: async () => (await source()).getTime() < expires };
    const margin = Math.min(ms / 10, 5000);
    const startedAt = performance.now();
    return { held: async () => at.getTime() + (performance.now() - startedAt) < expires - margin };
  }

  /** Replaces the time source (tests, the benchmark); `undefined` restores the database clock. */
  useSource(source: ClockSource | undefined): void {
    this.source = source;
  }
}
