import { Injectable, Logger } from '@nestjs/common';
import type { Counter } from 'prom-client';
import { DataSource } from 'typeorm';
import { MetricsService } from '../../platform/metrics/metrics.service';

/** The statuses of a workflow run still in progress: few rows, counted exactly when scraped. */
export const ACTIVE_RUN_STATUSES = ['pending', 'running', 'waiting-approval', 'waiting-input', 'waiting-external', 'cancelling'] as const;
/** How a workflow run ends. */
export const FINAL_RUN_STATUSES = ['completed', 'failed', 'cancelled'] as const;
export type FinalRunStatus = (typeof FINAL_RUN_STATUSES)[number];

/**
 * Workflow runs in progress by status; served by the partial index `run_active_idx`, whose predicate
 * this one repeats word for word (a list passed as a parameter would not prove the index applies).
 */
export const ACTIVE_RUNS_SQL = `SELECT "status", count(*)::int AS "n" FROM "run" WHERE "kind" = 'workflow' AND "status" IN (${ACTIVE_RUN_STATUSES.map((s) => `'${s}'`).join(', ')}) GROUP BY 1`;

/** The run a finished count belongs to, for its log line. */
export interface RunEnd {
  runId: string;
  tenant: string;
  workspace?: string | null;
  errorCode?: string | null;
  /** The run's W3C traceparent (the creating request's trace), if it has one. */
  traceParent?: string | null;
}

/** How a node execution on this replica ended. */
export type NodeExecutionOutcome = 'completed' | 'failed' | 'cancelled' | 'suspended';

/**
 * The run engine's collectors: `openwop_runs` (workflow runs still in progress, by status, all
 * tenants, counted in the database when scraped through the status index, so every replica answers
 * the same cluster-wide figure and a scrape costs the same however many runs have finished),
 * `openwop_runs_finished_total` (runs this replica finished, by final status: sum it over replicas),
 * and `openwop_run_node_executions_total` (node executions this replica finished, by executor typeId
 * and outcome; the typeId label is bounded by the registered executors).
 */
@Injectable()
export class RunMetrics {
  private readonly log = new Logger('runs.metrics');
  private readonly nodes: Counter<'type_id' | 'outcome'>;
  private readonly finished: Counter<'status'>;

  constructor(metrics: MetricsService, ds: DataSource) {
    const log = this.log;
    metrics.gauge({
      name: 'openwop_runs',
      help: 'Workflow runs in progress (pending, running, waiting-approval, waiting-input, waiting-external, cancelling), across all tenants (counted in the database at scrape time).',
      labelNames: ['status'],
      async collect() {
        let rows: Array<{ status: string; n: number }>;
        try {
          rows = (await ds.query(ACTIVE_RUNS_SQL)) as typeof rows;
        } catch (e) {
          // Keep the last figures rather than fail the whole scrape.
          log.warn({ msg: 'could not count runs for /metrics', err: (e as Error).message });
          return;
        }
        this.reset();
        for (const s of ACTIVE_RUN_STATUSES) this.set({ status: s }, 0);
        for (const r of rows) this.set({ status: r.status }, r.n);
      },
    });
    this.finished = metrics.counter({
      name: 'openwop_runs_finished_total',
      help: 'Workflow runs this replica finished, by final status (completed, failed, cancelled); sum over replicas for the cluster.',
      labelNames: ['status'],
    });
    for (const s of FINAL_RUN_STATUSES) this.finished.inc({ status: s }, 0);
    this.nodes = metrics.counter({
      name: 'openwop_run_node_executions_total',
      help: 'Node executions this replica finished, by executor typeId and outcome (completed, failed, cancelled, suspended on an approval gate).',
      labelNames: ['type_id', 'outcome'],
    });
  }

  /**
   * Counts a run that ended here and logs it (production-profile.md §Observability: run id, tenant,
   * terminal status, error code and the trace the run joined, which correlates it with the request
   * that created it).
   */
  runFinished(status: FinalRunStatus, run?: RunEnd): void {
    this.finished.inc({ status });
    if (run) {
      const traceId = run.traceParent ? run.traceParent.split('-')[1] : undefined;
      // Written after the turn of the event loop that ended the run: a run created and finished by
      // its POST /v1/runs ends in the turn that answers that request, and its answer does not wait
      // for a log line (its formatting, and a write whose pipe wakes the log's reader: some 0.1 ms).
      setImmediate(() => this.log.log({ msg: 'run ended', runId: run.runId, tenant: run.tenant, workspace: run.workspace ?? undefined, status, errorCode: run.errorCode ?? undefined, traceId }));
    }
  }

  nodeFinished(typeId: string, outcome: NodeExecutionOutcome): void {
    this.nodes.inc({ type_id: typeId, outcome });
  }
}
