import { Module } from '@nestjs/common';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { GoalClock } from './goal-clock';
import { GoalContinuationService } from './goal-continuation.service';
import { GoalWorkerSelector } from './goal-worker-selector.service';
import { GoalExtensionsService } from './goal-extensions.service';
import { GoalSchedulerMetrics } from './goal-scheduler.metrics';
import { GoalSchedulerService } from './goal-scheduler.service';
import { GoalsAdvertiser } from './goals.advertiser';
import { GoalsController } from './goals.controller';
import { GoalsService } from './goals.service';
import { goalsSettings, GOALS_SETTINGS } from './goals.settings';
import { HostSchemaJudge } from './judges/host-schema.judge';
import { RunEventVerifierJudge } from './judges/run-event-verifier.judge';
import { LocalRunGoalWorker } from './workers/local-run.worker';
import { GoalDelegationService } from './goal-delegation.service';
import { OpenWopRuntimeWorker } from './workers/openwop-runtime.worker';
import { GoalEntity, GoalRunEntity } from './goal.entity';
import { GoalRetention } from './goal-retention';
import { GoalStore } from './goal-store';
import { seamAliasesOf } from '../../platform/seams/seam-alias';

/** Standing goals (RFC 0097) with judge-based completion and the replica-safe continuation scheduler. */
@Module({
  controllers: [GoalsController, seamAliasesOf(GoalsController)],
  providers: [
    { provide: GOALS_SETTINGS, inject: [HOST_CONFIG], useFactory: (config: HostConfig) => goalsSettings(config) },
    GoalClock,
    GoalExtensionsService,
    HostSchemaJudge,
    RunEventVerifierJudge,
    OpenWopRuntimeWorker,
    LocalRunGoalWorker,
    GoalDelegationService,
    GoalWorkerSelector,
    GoalStore,
    GoalContinuationService,
    GoalsService,
    GoalSchedulerMetrics,
    GoalSchedulerService,
    GoalsAdvertiser,
    GoalRetention,
  ],
  exports: [GoalsService, GoalContinuationService, GoalWorkerSelector, GoalSchedulerService, GoalExtensionsService, GoalClock],
})
export class GoalsModule {
  static readonly entities = [GoalEntity, GoalRunEntity];
}
