import { Injectable, Logger } from '@nestjs/common';
import type { Counter } from 'prom-client';
import { DataSource } from 'typeorm';
import { MetricsService } from '../../platform/metrics/metrics.service';

/** Every status a workflow run can have (each is exported, 0 when no run has it). */
export const RUN_STATUSES = ['pending', 'running', 'waiting-approval', 'cancelling', 'completed', 'failed', 'cancelled'] as const;

/** How a node execution on this replica ended. */
export type NodeExecutionOutcome = 'completed' | 'failed' | 'cancelled' | 'suspended';

/**
 * The run engine's collectors: `openwop_runs` (workflow runs by status, all tenants, counted in the
 * database when scraped, so every replica answers the same cluster-wide figure) and
 * `openwop_run_node_executions_total` (node executions this replica finished, by executor typeId and
 * outcome; the typeId label is bounded by the registered executors).
 */
@Injectable()
export class RunMetrics {
  private readonly log = new Logger('runs.metrics');
  private readonly nodes: Counter<'type_id' | 'outcome'>;

  constructor(metrics: MetricsService, ds: DataSource) {
    const log = this.log;
    metrics.gauge({
      name: 'openwop_runs',
      help: 'Workflow runs by status, across all tenants (counted in the database at scrape time).',
      labelNames: ['status'],
      async collect() {
        let rows: Array<{ status: string; n: number }>;
        try {
          rows = (await ds.query(`SELECT "status", count(*)::int AS "n" FROM "run" WHERE "kind" = 'workflow' GROUP BY 1`)) as typeof rows;
        } catch (e) {
          // Keep the last figures rather than fail the whole scrape.
          log.warn({ msg: 'could not count runs for /metrics', err: (e as Error).message });
          return;
        }
        this.reset();
        for (const s of RUN_STATUSES) this.set({ status: s }, 0);
        for (const r of rows) this.set({ status: r.status }, r.n);
      },
    });
    this.nodes = metrics.counter({
      name: 'openwop_run_node_executions_total',
      help: 'Node executions this replica finished, by executor typeId and outcome (completed, failed, cancelled, suspended on an approval gate).',
      labelNames: ['type_id', 'outcome'],
    });
  }

  nodeFinished(typeId: string, outcome: NodeExecutionOutcome): void {
    this.nodes.inc({ type_id: typeId, outcome });
  }
}
