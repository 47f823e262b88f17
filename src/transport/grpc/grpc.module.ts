import { Module, Type } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ApprovalsModule } from '../../capabilities/approvals';
import { RunsModule } from '../../capabilities/runs';
import { ToolCatalogModule } from '../../capabilities/tool-catalog';
import { WebhooksModule } from '../../capabilities/webhooks';
import { AuthGuard } from '../../platform/identity/auth.guard';
import { EngineServiceImplementation } from './engine-service';
import { GrpcListener } from './grpc-listener';
import { GrpcAdvertiser } from './grpc.advertiser';
import { GrpcMetrics } from './grpc.metrics';
import { GetCapabilitiesMethod } from './methods/discovery.method';
import { InspectInterruptByTokenMethod, ResolveInterruptByRunMethod, ResolveInterruptByTokenMethod } from './methods/interrupts.methods';
import { VerifyAuditLogMethod } from './methods/audit.methods';
import { ListApprovalsMethod, ListRunsMethod, ListToolsMethod, ListWorkflowsMethod } from './methods/lists.methods';
import { BulkCancelRunsMethod, CancelRunMethod, CreateRunMethod, ForkRunMethod, GetArtifactMethod, GetRunMethod, PauseRunMethod, ResumeRunMethod, StreamRunEventsMethod } from './methods/runs.methods';
import { RegisterWebhookMethod, UnregisterWebhookMethod } from './methods/webhooks.methods';
import { GetWorkflowMethod } from './methods/workflows.methods';

/**
 * The Engine methods this host serves, one provider each (see engine-method.ts). Serving another
 * is a provider whose `rest` names the REST route it stands for, added here; every method not
 * listed answers UNIMPLEMENTED with the error envelope.
 */
export const ENGINE_METHOD_PROVIDERS: Type<unknown>[] = [
  GetCapabilitiesMethod,
  GetWorkflowMethod,
  CreateRunMethod,
  GetRunMethod,
  CancelRunMethod,
  BulkCancelRunsMethod,
  ForkRunMethod,
  VerifyAuditLogMethod,
  PauseRunMethod,
  ResumeRunMethod,
  StreamRunEventsMethod,
  ResolveInterruptByRunMethod,
  ResolveInterruptByTokenMethod,
  InspectInterruptByTokenMethod,
  GetArtifactMethod,
  RegisterWebhookMethod,
  UnregisterWebhookMethod,
  ListRunsMethod,
  ListToolsMethod,
  ListApprovalsMethod,
  ListWorkflowsMethod,
];

/**
 * The gRPC transport (grpc-transport.md): openwop.v1.Engine beside REST, on the same services and
 * the same request pipeline (the AuthGuard is the platform's, run per call against the twin REST
 * route). The listener starts only when `serve` asks (OPENWOP_GRPC_PORT), never in a host that is
 * only built (tests, the CLI's export and import).
 */
@Module({
  imports: [DiscoveryModule, RunsModule, WebhooksModule, ApprovalsModule, ToolCatalogModule],
  providers: [AuthGuard, GrpcMetrics, EngineServiceImplementation, GrpcListener, GrpcAdvertiser, ...ENGINE_METHOD_PROVIDERS],
  exports: [GrpcListener, EngineServiceImplementation],
})
export class GrpcTransportModule {}
