/** The tool catalog as other capabilities see it: its module, its services and the types of their calls. */
export { ToolCatalogModule } from './tool-catalog.module';
export { ToolCatalogService } from './tool-catalog.service';
export type { CatalogEntry } from './tool-catalog.service';
export { ToolSessionService, TOOL_SESSION_WORKFLOW, argsHash } from './sessions/tool-session.service';
export { PackDirectory } from './sources/pack-directory';
export { InstalledPacksService } from './packs/installed-packs.service';
export { McpClientService } from './mcp/mcp-client.service';
export { isMcpRoundSession, completedCall, failedCall } from './mcp/mcp-tool-session';
export type { McpRoundSession } from './mcp/mcp-tool-session';
export type { McpCallRound, McpInputRequest, McpRetry } from './mcp/mcp-connect';
export { MCP_MRTR_MAX_ROUNDS, McpRoundsExceededError } from './mcp/mcp-revision';
// ctx.mcp (RFC 0204 §A): requests to the tenant's MCP servers answered with the server's results unaltered.
export { McpHostService, MCP_CONFORMANCE_DOWN } from './mcp/mcp-host.service';
export type { McpCaller } from './mcp/mcp-client.service';
// Governed dispatch: the one decision every tool-calling path asks before it calls (core.tool nodes,
// and through them the MCP mount), its record, and the errors of the paths that cannot wait for a gate.
export { ToolDispatchService, ToolDispatchDeniedError, ToolApprovalRequiredError, DISPATCH_DECIDED_EVENT, verdictFacts } from './dispatch/tool-dispatch.service';
export type { DispatchPath, DispatchRecordContext, DispatchPolicyView } from './dispatch/tool-dispatch.service';
export { decideDispatch, effectivePolicy, SAFETY_TIERS, DISPATCH_DECISIONS } from './dispatch/dispatch-policy';
export type { DispatchDecision, DispatchPolicyDocument, DispatchVerdict, DispatchSubject, EffectiveDispatchPolicy } from './dispatch/dispatch-policy';
// For the gRPC transport's ListTools: the REST route it is the twin of, and the route's reading of its query.
export { ToolCatalogController } from './tool-catalog.controller';
export { parseCatalogSource, parseCatalogView } from './catalog-query';
