import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { ApprovalsModule } from '../approvals';
import { ToolCatalogModule } from '../tool-catalog';
import { CoreApprovalExecutor } from './executors/core-approval.executor';
import { GovernanceApprovalGateExecutor } from './executors/governance-approval-gate.executor';
import { CoreClarificationExecutor } from './executors/core-clarification.executor';
import { CoreExternalEventExecutor } from './executors/core-external-event.executor';
import { InterruptTokenService } from './interrupts/interrupt-tokens.service';
import { InterruptsController } from './interrupts/interrupts.controller';
import { InterruptCallbackEntity } from './interrupts/interrupt-callback.entity';
import { InterruptCallbacks } from './interrupts/interrupt-callbacks.service';
import { InterruptsService } from './interrupts/interrupts.service';
import { CoreDelayExecutor } from './executors/core-delay.executor';
import { CredentialInterrupts } from './interrupts/credential-interrupts.service';
import { CoreCredentialExecutor } from './executors/core-credential.executor';
import { CoreFailExecutor } from './executors/core-fail.executor';
import { CoreNoopExecutor } from './executors/core-noop.executor';
import { CoreHttpRequestExecutor } from './executors/core-http-request.executor';
import { ToolHooksAdvertiser } from './engine/tool-hooks.advertiser';
import { DeferredExpandSeam } from './seams/deferred-expand-seam';
import { CoreToolExecutor } from './executors/core-tool.executor';
import { CoreSubWorkflowExecutor } from './executors/core-subworkflow.executor';
import { CoreSetVariableExecutor } from './executors/core-set-variable.executor';
import { CapabilityToggles } from './seams/capability-toggles';
import { WorkflowSeamsController } from './seams/workflow-seams.controller';
import { CoreConformanceMcpInvokeExecutor } from './executors/core-conformance-mcp-invoke.executor';
import { CoreConformanceMcpClientExecutor } from './executors/core-conformance-mcp-client.executor';
import { CoreConformanceHoldExecutor } from './executors/core-conformance-hold.executor';
import { CoreConformanceSideEffectExecutor } from './executors/core-conformance-side-effect.executor';
import { NodeMcpBinder } from './engine/node-mcp';
import { NodeExecutorRegistry } from './engine/node-executor-registry.service';
import { RunEngineService } from './engine/run-engine.service';
import { RunsAdvertiser } from './runs.advertiser';
import { BUDGET_CONTROLLERS, BUDGET_PROVIDERS } from './budget';
import { DEAD_LETTER_CONTROLLERS, DEAD_LETTER_PROVIDERS } from './dead-letters';
import { COMPENSATION_CONTROLLERS, COMPENSATION_ENTITIES, COMPENSATION_PROVIDERS } from './compensation';
import { NodeHttpBinder } from './engine/node-http';
import { ConnectionsModule } from '../connections';
import { WebhooksModule } from '../webhooks';
import { WorkspaceModule } from '../workspace';
import { SafeFetchAdvertiser } from './engine/safe-fetch.advertiser';
import { SafeFetchSeamController } from './seams/safe-fetch-seam.controller';
import { EgressSeamController } from './seams/egress-seam.controller';
import { BackpressureAdvertiser } from './run-admission';
import { RunDebugBundleController } from './api/run-debug-bundle.controller';
import { IdentitySeamsController } from './seams/identity-seams.controller';
import { GovernanceSeamsController } from './seams/governance-seams.controller';
import { DebugBundleAdvertiser } from './api/run-debug-bundle';
import { RunArtifactsController } from './api/run-artifacts.controller';
import { RunsController } from './api/runs.controller';
import { RunControlController } from './api/run-control.controller';
import { RunEventsController } from './api/run-events.controller';
import { IdempotencySeamsController } from './seams/idempotency-seams.controller';
import { RunMetrics } from './runs.metrics';
import { RunsService } from './runs.service';
import { RunLauncher } from './run-launcher.service';
import { RunRetention } from './run-retention';
import { RunControlService } from './run-control.service';
import { RunCreationService } from './run-creation.service';
import { RunForkService } from './replay/run-fork.service';
import { EffectSeamsController } from './replay/effect-seams.controller';
import { RunEffectsController } from './replay/run-effects.controller';
import { EffectSeamFireController } from './seams/effect-seam-fire.controller';
import { Era2SeedController } from './seams/era2-seed.controller';
import { RUNS_SETTINGS, runsSettings } from './runs.settings';
import { WorkflowPackChecks } from './workflow-pack-checks.service';
import { WorkflowResolver } from './workflow-resolver.service';
import { WorkflowsController } from './api/workflows.controller';
import { RunNodeEntity } from './run-node.entity';
import { RunDefinitionEntity } from './run-definition.entity';
import { RunPrincipalEntity } from './run-principal.entity';
import { RunEntity } from './run.entity';
import { RunService } from './run.service';
import { RunStreamsOwner } from './engine/run-streams';
import { RunArtifactEntity } from './artifacts/run-artifact.entity';
import { RunArtifactsService } from './artifacts/run-artifacts.service';
import { RunArtifactReader } from './artifacts/run-artifact-reader.service';
import { KeyedRunOperations } from './api/keyed-run-operations';
import { RunEventFeed } from './api/run-event-feed.service';
import { DatabaseArtifactStore } from './artifacts/database-artifact-store';
import { CoreArtifactExecutor } from './executors/core-artifact.executor';
import { MCP_MOUNT_EXECUTORS } from './executors/core-mcp-mount.executors';
import { SampleWorkflowsController } from './seams/sample-workflows.controller';
import { TransportRunsService } from './transport-runs.service';

/**
 * The run engine: `POST /v1/runs` and the run lifecycle, the node-executor extension point with the
 * built-in `core.noop`, `core.delay`, `core.fail`, `core.tool`, `core.approval`, `core.clarification`,
 * `core.external-event` and `core.artifact` executors, the MCP mount's `core.openwop.mcp.*` node types, run artifacts (`ctx.artifacts`, the artifact-store extension point), interrupts (run-scoped and signed-token resolution), RFC 0058 bounds,
 * and replica-safe execution (database leases with fencing).
 */
@Module({
  imports: [DiscoveryModule, ToolCatalogModule, ApprovalsModule, ConnectionsModule, WebhooksModule, WorkspaceModule],
  // RunControlController and RunEventsController right after RunsController: the OpenAPI document
  // lists the run routes in this order.
  controllers: [RunsController, RunControlController, RunEventsController, RunDebugBundleController, IdempotencySeamsController, InterruptsController, WorkflowsController, RunArtifactsController, SampleWorkflowsController, EffectSeamsController, RunEffectsController, EffectSeamFireController, Era2SeedController, WorkflowSeamsController, IdentitySeamsController, GovernanceSeamsController, ...BUDGET_CONTROLLERS, ...DEAD_LETTER_CONTROLLERS, ...COMPENSATION_CONTROLLERS, SafeFetchSeamController, EgressSeamController],
  providers: [
    { provide: RUNS_SETTINGS, inject: [HOST_CONFIG], useFactory: (config: HostConfig) => runsSettings(config) },
    NodeExecutorRegistry,
    RunMetrics,
    WorkflowResolver,
    RunEngineService,
    RunCreationService,
    RunsService,
    RunLauncher,
    RunControlService,
    RunForkService,
    RunsAdvertiser,
    CoreNoopExecutor,
    CoreHttpRequestExecutor,
    ToolHooksAdvertiser,
    DeferredExpandSeam,
    CoreDelayExecutor,
    BackpressureAdvertiser,
    DebugBundleAdvertiser,
    CoreFailExecutor,
    CoreToolExecutor,
    CoreSubWorkflowExecutor,
    CoreSetVariableExecutor,
    CapabilityToggles,
    CoreConformanceMcpInvokeExecutor,
    CoreConformanceMcpClientExecutor,
    CoreConformanceHoldExecutor,
    CoreConformanceSideEffectExecutor,
    NodeMcpBinder,
    CoreApprovalExecutor,
    GovernanceApprovalGateExecutor,
    WorkflowPackChecks,
    CoreClarificationExecutor,
    CoreExternalEventExecutor,
    InterruptTokenService,
    InterruptsService,
    InterruptCallbacks,
    RunArtifactsService,
    CredentialInterrupts,
    CoreCredentialExecutor,
    RunRetention,
    RunService,
    RunStreamsOwner,
    DatabaseArtifactStore,
    CoreArtifactExecutor,
    KeyedRunOperations,
    RunArtifactReader,
    RunEventFeed,
    TransportRunsService,
    ...MCP_MOUNT_EXECUTORS,
    ...BUDGET_PROVIDERS,
    ...DEAD_LETTER_PROVIDERS,
    ...COMPENSATION_PROVIDERS,
    NodeHttpBinder,
    SafeFetchAdvertiser,
  ],
  // What other capabilities and the transports use (through index.ts).
  exports: [RunsService, RunLauncher, RunCreationService, RunControlService, RunEngineService, WorkflowResolver, InterruptsService, CredentialInterrupts, RunForkService, RunArtifactsService, KeyedRunOperations, RunArtifactReader, RunEventFeed, TransportRunsService],
})
export class RunsModule {
  static readonly entities = [RunEntity, RunNodeEntity, RunDefinitionEntity, RunPrincipalEntity, RunArtifactEntity, InterruptCallbackEntity, ...COMPENSATION_ENTITIES];
}
