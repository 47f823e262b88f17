import { Injectable, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { deletedCount, RetentionService, RunRef } from '../../platform/retention/retention.service';

/** The gates of runs (a run's own, or a node's: subject kind `run-node`), whatever their tenant column says, as before. */
const GATES_OF_RUNS = `SELECT a."id" FROM "approval" a WHERE a."run_id" = ANY($1::uuid[]) UNION SELECT a."id" FROM "approval" a WHERE a."subject_kind" = 'run-node' AND a."subject_id" = ANY($1::uuid[])`;

/**
 * The approvals capability's part of retention: a run a pending gate or interrupt names is kept; the
 * closed gates of a deleted run go with it, their decisions first (two purgers, one count each).
 */
@Injectable()
export class ApprovalRetention implements OnModuleInit {
  constructor(private readonly retention: RetentionService) {}

  onModuleInit(): void {
    this.retention.registerRunKeeper({
      name: 'pending approval gate',
      keeps: (r) =>
        // Two probes per run, one per index (approval_run_node_idx, approval_subject_idx); OFFSET 0 keeps each a probe (RunKeeper).
        `(EXISTS (SELECT 1 FROM "approval" a WHERE a."run_id" = ${r.id} AND a."state" = 'pending' AND a."tenant" = ${r.tenant} OFFSET 0)
           OR EXISTS (SELECT 1 FROM "approval" a WHERE a."tenant" = ${r.tenant} AND a."subject_id" = ${r.id} AND a."subject_kind" = 'run-node' AND a."state" = 'pending' OFFSET 0))`,
    });
    this.retention.registerRunPurger({ counts: 'approvalDecisions', purge: async (m, runs) => ({ deleted: await this.purge(m, runs, 'approval_decision', 'approval_id') }) });
    this.retention.registerRunPurger({ counts: 'approvals', purge: async (m, runs) => ({ deleted: await this.purge(m, runs, 'approval', 'id') }) });
  }

  private async purge(m: EntityManager, runs: RunRef[], table: 'approval' | 'approval_decision', column: 'id' | 'approval_id'): Promise<number> {
    return deletedCount(await m.query(`DELETE FROM "${table}" WHERE "${column}" IN (${GATES_OF_RUNS})`, [runs.map((r) => r.id)]));
  }
}
