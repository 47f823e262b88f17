import { Injectable, OnModuleInit } from '@nestjs/common';
import { RetentionService } from '../../platform/retention/retention.service';

/**
 * The goals capability's part of retention: a run an active or escalated goal counts among its
 * iterations is kept. The goal's ledger (`goal_run`) stays with the goal, also for deleted runs.
 */
@Injectable()
export class GoalRetention implements OnModuleInit {
  constructor(private readonly retention: RetentionService) {}

  onModuleInit(): void {
    this.retention.registerRunKeeper({
      name: 'active goal iteration',
      // A probe per run over goal_run_run_idx (OFFSET 0 keeps it one: RunKeeper).
      keeps: (r) =>
        `EXISTS (SELECT 1 FROM "goal_run" g JOIN "goal" o ON o."id" = g."goal_id" AND o."tenant" = g."tenant"
                           WHERE g."tenant" = ${r.tenant} AND g."run_id" = ${r.id}::text AND o."state" IN ('active', 'escalated') OFFSET 0)`,
    });
  }
}
