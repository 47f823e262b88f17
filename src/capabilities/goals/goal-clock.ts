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

  /** Replaces the time source (tests, the benchmark); `undefined` restores the database clock. */
  useSource(source: ClockSource | undefined): void {
    this.source = source;
  }
}
