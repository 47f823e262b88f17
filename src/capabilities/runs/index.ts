/**
 * The runs capability as other capabilities and the transports see it; nothing else of runs/ is
 * imported from outside it (capability-boundaries.spec.ts).
 */
// Its module and the services other capabilities call.
export { RunsModule } from './runs.module';
export { RunsService } from './runs.service';
export { RunLauncher } from './run-launcher.service';
export { RunEngineService } from './engine/run-engine.service';
export { WorkflowResolver } from './workflow-resolver.service';
export { InterruptsService } from './interrupts/interrupts.service';
export { CredentialInterrupts } from './interrupts/credential-interrupts.service';
export { RunForkService } from './replay/run-fork.service';

// For the transports (gRPC, MCP): the services behind the run routes, the same calls REST makes.
export { RunCreationService } from './run-creation.service';
export { RunControlService, type BulkCancelResult } from './run-control.service';
export { KeyedRunOperations } from './api/keyed-run-operations';
export { RunArtifactReader } from './artifacts/run-artifact-reader.service';
export { RunEventFeed } from './api/run-event-feed.service';
// For the MCP mount: runs it starts and waits on, the node types that expose a chain, the host chain calling one tool.
export { TransportRunsService } from './transport-runs.service';
export { MCP_EXPOSE_TOOL, MCP_EXPOSE_RESOURCE, MCP_EXPOSE_PROMPT, MCP_HANDLE_ELICITATION, MCP_HANDLE_SAMPLING, MCP_ELICITATION_PROFILE, MCP_NAME } from './executors/core-mcp-mount.executors';
export { CALL_TOOL_CHAIN, type ResolvedChain } from './workflow-resolver.service';
// The REST request DTOs, so another transport validates with REST's own rules (and refuses in the
// same words), with the two checks their decorators cannot express.
export { BulkCancelBody, bulkCancelRunIds, CancelRunBody, CreateRunBody, ForkRunBody, resumeReason, RunControlBody, RunEventsQuery, RunListQuery } from './api/runs.dto';
export { ResolveInterruptBody } from './interrupts/interrupts.dto';
// The REST routes, named by a gRPC method as its twin: their scopes and rate-limit class are read
// from these controllers' route metadata.
export { RunsController } from './api/runs.controller';
export { RunControlController } from './api/run-control.controller';
export { RunEventsController } from './api/run-events.controller';
export { RunArtifactsController } from './api/run-artifacts.controller';
export { InterruptsController } from './interrupts/interrupts.controller';
export { WorkflowsController } from './api/workflows.controller';
export { listWorkflows, WorkflowListQuery } from './api/workflow-list';
export type { WorkflowSummary } from './api/workflow-list';
