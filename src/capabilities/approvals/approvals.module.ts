import { Module } from '@nestjs/common';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { ApprovalDecisionEntity, ApprovalEntity } from './approval.entity';
import { ApprovalRetention } from './approval-retention';
import { ApprovalsController } from './approvals.controller';
import { ApprovalsService } from './approvals.service';
import { APPROVALS_SETTINGS, approvalsSettings } from './approvals.settings';

/**
 * RFC 0051 approval gates, whoever opens them: proposal apply in approval-gate activation mode, run
 * steps (`core.approval`, clarifications, external events, tools that need approval). The gated
 * subject registers what its release and closing do (`ApprovalsService.registerSubject`).
 */
@Module({
  controllers: [ApprovalsController],
  providers: [{ provide: APPROVALS_SETTINGS, useFactory: (config: HostConfig) => approvalsSettings(config), inject: [HOST_CONFIG] }, ApprovalsService, ApprovalRetention],
  exports: [ApprovalsService],
})
export class ApprovalsModule {
  static readonly entities = [ApprovalEntity, ApprovalDecisionEntity];
}
