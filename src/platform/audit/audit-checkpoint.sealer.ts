import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { PeriodicTaskService } from '../scheduler/periodic-task.service';
import { AuditLogService } from './audit-log.service';

export const AUDIT_SEAL_TASK = 'platform.audit-checkpoint';

/**
 * The time-based half of the checkpoint cadence: every `checkpointIntervalSeconds`, one replica (a
 * periodic-task lease) signs a checkpoint over each chain's entries that no checkpoint covers yet,
 * so a quiet tenant's newest entries do not wait for the entry-count cadence to be anchored.
 */
@Injectable()
export class AuditCheckpointSealer implements OnApplicationBootstrap {
  private readonly logger = new Logger('audit');

  constructor(
    private readonly audit: AuditLogService,
    private readonly tasks: PeriodicTaskService,
  ) {}

  onApplicationBootstrap(): void {
    this.tasks.register({
      name: AUDIT_SEAL_TASK,
      intervalMs: this.audit.checkpointIntervalSeconds * 1000,
      run: async (signal) => {
        const sealed = await this.audit.sealPending(signal);
        if (sealed) this.logger.log({ msg: 'audit checkpoints sealed', checkpoints: sealed });
      },
    });
  }
}
