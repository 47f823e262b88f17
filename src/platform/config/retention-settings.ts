import { envInt } from './env-int';
import type { EnvSetting } from './env-setting';

/**
 * How long finished runs and idempotency records are kept, and how the retention sweep paces
 * itself (src/platform/retention, docs/operations.md §Retention): a sweep works the backlog off in
 * batches until it is empty or its time budget is spent, pausing between batches so it takes at most
 * its share of the time, and a sweep that ended with a backlog left is followed by the next one
 * sooner than the hour.
 */
export interface RetentionConfig {
  runDays: number;
  idempotencyHours: number;
  /** Longest a sweep keeps deleting, in milliseconds; what is left goes to the next sweep. */
  sweepBudgetMs: number;
  /** The share of the sweep's time spent in batches (1..100 %); the rest is pauses between them. */
  sweepDutyPercent: number;
  /** How soon the next sweep comes after one that stopped with a backlog left, in milliseconds. */
  catchUpMs: number;
  /** About how long one batch (one statement) takes: each batch is sized from the time of the one before. */
  batchTargetMs: number;
}

export const RETENTION_ENV_SETTINGS: EnvSetting[] = [
  { name: 'OPENWOP_RUN_RETENTION_DAYS', default: '30', description: 'Runs finished (completed, failed or cancelled) longer ago than this many days are deleted with their node rows, events and invocation records (at least 7). The audit log is kept.' },
  { name: 'OPENWOP_IDEMPOTENCY_RETENTION_HOURS', default: '168', description: 'Idempotency records (the stored answers of `Idempotency-Key` requests) older than this many hours are deleted (at least 24); a key reused after that is a new request.' },
  {
    name: 'OPENWOP_RETENTION_SWEEP_BUDGET_MS',
    default: '300000',
    description: 'Longest one retention sweep keeps deleting, in milliseconds (1000 to 3600000): it works the expired runs off in batches (each one statement, sized by OPENWOP_RETENTION_BATCH_MS) until none is left or this time is spent; what is left goes to the next sweep, which then comes after OPENWOP_RETENTION_CATCH_UP_MS instead of the hour.',
  },
  {
    name: 'OPENWOP_RETENTION_SWEEP_DUTY_PERCENT',
    default: '50',
    description: 'The share of a retention sweep\'s time spent deleting (1 to 100): after a batch that took d ms the sweep pauses d × (100 − share) / share ms, so the database and the run engine keep the rest (100: no pause, the sweep still yields the event loop between batches).',
  },
  {
    name: 'OPENWOP_RETENTION_CATCH_UP_MS',
    default: '60000',
    description: 'How soon the next retention sweep comes after one that spent its budget with expired runs left, in milliseconds (1000 to 3600000); a sweep that emptied the backlog is followed by the next one an hour later.',
  },
  {
    name: 'OPENWOP_RETENTION_BATCH_MS',
    default: '200 (50 on the embedded engine)',
    description: 'About how long one retention batch takes, in milliseconds (10 to 5000): a batch is one statement that claims expired runs and deletes them with all their rows, and each batch is sized (100 to 10,000 runs, the first 500) from the time of the one before to take about this long. It bounds how long a batch holds its rows locked and, on the embedded engine, which runs inside the host process, how long it holds the event loop.',
  },
];

export function loadRetentionSettings(env: NodeJS.ProcessEnv): RetentionConfig {
  return {
    runDays: envInt(env, 'OPENWOP_RUN_RETENTION_DAYS', 30, 7, 36_500),
    idempotencyHours: envInt(env, 'OPENWOP_IDEMPOTENCY_RETENTION_HOURS', 168, 24, 876_000),
    sweepBudgetMs: envInt(env, 'OPENWOP_RETENTION_SWEEP_BUDGET_MS', 300_000, 1_000, 3_600_000),
    sweepDutyPercent: envInt(env, 'OPENWOP_RETENTION_SWEEP_DUTY_PERCENT', 50, 1, 100),
    catchUpMs: envInt(env, 'OPENWOP_RETENTION_CATCH_UP_MS', 60_000, 1_000, 3_600_000),
    // The embedded engine runs each statement on the host's own thread: shorter batches there.
    batchTargetMs: envInt(env, 'OPENWOP_RETENTION_BATCH_MS', env.DATABASE_URL ? 200 : 50, 10, 5_000),
  };
}
