import { Injectable } from '@nestjs/common';
import type { Counter, Histogram } from 'prom-client';
import { MetricsService } from '../../platform/metrics/metrics.service';
import type { SchedulerPassResult } from './goal-scheduler.service';

/** How each claimed iteration ended (the counters of a scheduler pass). */
const OUTCOMES = ['dispatched', 'recorded', 'closed', 'fenced', 'failed'] as const;

/**
 * The continuation scheduler's collectors, registered by the goals capability with the platform
 * metrics registry: how late goals are claimed, and how many iterations were claimed and how they ended.
 */
@Injectable()
export class GoalSchedulerMetrics {
  private readonly lag: Histogram<string>;
  private readonly claimed: Counter<string>;
  private readonly finished: Counter<'outcome'>;

  constructor(metrics: MetricsService) {
    this.lag = metrics.histogram({
      name: 'openwop_goal_scheduler_lag_seconds',
      help: 'How long after its due time a standing goal was claimed by the continuation scheduler.',
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
    });
    this.claimed = metrics.counter({
      name: 'openwop_goal_iterations_claimed_total',
      help: 'Goal iterations claimed by this replica’s continuation scheduler.',
    });
    this.finished = metrics.counter({
      name: 'openwop_goal_iterations_finished_total',
      help: 'Goal iterations this replica finished, by outcome (dispatched: a run was started; recorded: a run was judged; closed: a bound closed the goal; fenced: another replica took it over; failed: retried later).',
      labelNames: ['outcome'],
    });
    for (const outcome of OUTCOMES) this.finished.inc({ outcome }, 0);
  }

  /** A batch was claimed at `now`: observe how late each goal was. */
  claimedBatch(now: Date, dueTimes: Array<Date | null>): void {
    this.claimed.inc(dueTimes.length);
    for (const due of dueTimes) if (due) this.lag.observe(Math.max(0, (now.getTime() - due.getTime()) / 1000));
  }

  passFinished(result: SchedulerPassResult): void {
    for (const outcome of OUTCOMES) if (result[outcome]) this.finished.inc({ outcome }, result[outcome]);
  }
}
