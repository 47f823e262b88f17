import { Injectable, OnModuleInit } from '@nestjs/common';
import { RetentionService } from '../../platform/retention/retention.service';

/**
 * The gates of the runs in relation `runs` (a run's own by its run id, over approval_run_node_idx; a node's,
 * subject kind `run-node`, by its subject over approval_subject_idx: a run's gates carry the run's tenant).
 * A gate found both ways is listed twice, which a DELETE ... USING deletes once (no sort to drop the twin).
 */
const gatesOf = (runs: string) =>
  `SELECT a."id", a."tenant" FROM "approval" a JOIN ${runs} d ON a."run_id" = d."id"
   UNION ALL SELECT a."id", a."tenant" FROM "approval" a JOIN ${runs} d ON a."tenant" = d."tenant" AND a."subject_id" = d."id" AND a."subject_kind" = 'run-node'`;

/**
 * The approvals capability's part of retention: a run a pending gate or interrupt names is kept; the
 * closed gates of a deleted run go with it, and their decisions (two purgers, one count each).
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
    // Parts of the batch's statement: both read the gates from its snapshot, so neither depends on the other's deletion.
    this.retention.registerRunPurger({ counts: 'approvalDecisions', deletes: (runs) => `DELETE FROM "approval_decision" x USING (${gatesOf(runs)}) g WHERE x."tenant" = g."tenant" AND x."approval_id" = g."id" RETURNING 1` });
    this.retention.registerRunPurger({ counts: 'approvals', deletes: (runs) => `DELETE FROM "approval" a USING (${gatesOf(runs)}) g WHERE a."id" = g."id" RETURNING 1` });
  }
}
