import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

export type ClockSource = () => Promise<Date> | Date;

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
   * Whether `instant` has passed on a replaced time source. The scheduler's claims expire on this
   * clock: on the database clock a pass's LeaseKeeper watches that expiry with the process's own
   * monotonic clock (no round trip), but a replaced source is moved by hand, which no local timer can
   * see, so there it is read. On the database clock this answers false and costs nothing.
   */
  async movedPast(instant: Date): Promise<boolean> {
    if (!this.source) return false;
    return (await this.source()).getTime() >= instant.getTime();
  }

  /** Replaces the time source (tests, the benchmark); `undefined` restores the database clock. */
  useSource(source: ClockSource | undefined): void {
    this.source = source;
  }
}
