import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { ApprovalsModule } from '../approvals';
import { ToolCatalogModule } from '../tool-catalog';
import { CoreApprovalExecutor } from './executors/core-approval.executor';
import { CoreClarificationExecutor } from './executors/core-clarification.executor';
import { CoreExternalEventExecutor } from './executors/core-external-event.executor';
import { InterruptTokenService } from './interrupts/interrupt-tokens.service';
import { InterruptsController } from './interrupts/interrupts.controller';
import { InterruptsService } from './interrupts/interrupts.service';
import { CoreDelayExecutor } from './executors/core-delay.executor';
import { CoreFailExecutor } from './executors/core-fail.executor';
import { CoreNoopExecutor } from './executors/core-noop.executor';
import { CoreToolExecutor } from './executors/core-tool.executor';
import { NodeExecutorRegistry } from './node-executor-registry.service';
import { RunEngineService } from './run-engine.service';
import { RunsAdvertiser } from './runs.advertiser';
import { RunArtifactsController } from './run-artifacts.controller';
import { RunsController } from './runs.controller';
import { IdempotencySeamsController } from './seams/idempotency-seams.controller';
import { RunMetrics } from './runs.metrics';
import { RunsService } from './runs.service';
import { RunForkService } from './run-fork.service';
import { RUNS_SETTINGS, runsSettings } from './runs.settings';
import { WorkflowPackChecks } from './workflow-pack-checks.service';
import { WorkflowResolver } from './workflow-resolver.service';
import { WorkflowsController } from './workflows.controller';
import { RunNodeEntity } from './run-node.entity';

/**
 * The run engine: `POST /v1/runs` and the run lifecycle, the node-executor extension point with the
 * built-in `core.noop`, `core.delay`, `core.fail`, `core.tool`, `core.approval`, `core.clarification` and
 * `core.external-event` executors, interrupts (run-scoped and signed-token resolution), RFC 0058 bounds,
 * and replica-safe execution (database leases with fencing).
 */
@Module({
  imports: [DiscoveryModule, ToolCatalogModule, ApprovalsModule],
  controllers: [RunsController, IdempotencySeamsController, InterruptsController, WorkflowsController, RunArtifactsController],
  providers: [
    { provide: RUNS_SETTINGS, inject: [HOST_CONFIG], useFactory: (config: HostConfig) => runsSettings(config) },
    NodeExecutorRegistry,
    RunMetrics,
    WorkflowResolver,
    RunEngineService,
    RunsService,
    RunForkService,
    RunsAdvertiser,
    CoreNoopExecutor,
    CoreDelayExecutor,
    CoreFailExecutor,
    CoreToolExecutor,
    CoreApprovalExecutor,
    WorkflowPackChecks,
    CoreClarificationExecutor,
    CoreExternalEventExecutor,
    InterruptTokenService,
    InterruptsService,
  ],
  exports: [RunsService, RunEngineService, WorkflowResolver, InterruptsService, RunForkService],
})
export class RunsModule {
  static readonly entities = [RunNodeEntity];
}
