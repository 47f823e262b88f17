import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import {
  NodeExecutionContext,
  NodeExecutionError,
  NodeExecutionResult,
  NodeExecutor,
  NodeExecutorProvider,
  ToolCallResult,
  ToolReplayPolicy,
  ToolSession,
  ToolSourceKind,
} from '@openwop-host/plugin-sdk';
import { DomainError } from '../../../platform/errors/domain-error';
import { inSpan } from '../../../platform/tracing/tracing';
import type { Principal } from '../../../platform/identity/principal';
import { argsHash, CatalogEntry, isMcpRoundSession, ToolCatalogService, ToolDispatchService } from '../../tool-catalog';
import { Suspend } from '../engine/run-gates';
import { RunLauncher } from '../run-launcher.service';
import { callMcpTool } from './mcp-tool-rounds';
import { checkToolArguments } from './tool-arguments';
import { governedCall } from './governed-call';

/** The actor id written on the RFC 0064 call events of tool nodes (3-256 chars). */
export const RUN_AGENT_ID = 'openwop-host.run-engine';

const TRANSPORT: Record<ToolSourceKind, 'mcp' | 'http' | 'native'> = {
  mcp: 'mcp',
  connector: 'http',
  'node-pack': 'native',
  workflow: 'native',
  'host-extension': 'native',
};

function isPlaceholder(v: unknown): boolean {
  return typeof v === 'string' && /^\{\{\s*[^{}]+\s*\}\}$/.test(v);
}

function asPrincipal(p: NodeExecutionContext['principal']): Principal {
  return { tenant: p.tenant, workspace: p.workspace, principal: p.principal, scopes: p.scopes, kind: 'system' };
}

/**
 * `core.tool {toolId, arguments?, calls?}`: calls one catalog tool (`calls` times in one session, default once) through its source, authorized as the run
 * principal (a tool its starter cannot see is `tool_not_found`, exactly like an unknown one), once
 * the tenant's dispatch policy allows it (`deny`: `tool_dispatch_denied`; `approve`: an approval gate
 * first, which a descriptor's `approval: "always"` asks for too). The call is bracketed by `tool.session.opened` / `tool.session.closed` with content-free
 * `agent.toolCalled` / `agent.toolReturned` inside; the tool's result is the node's output. A `workflow` tool runs
 * its chain as a child run and returns the child's outputs. An MCP tool's output also says which
 * server and revision answered (`_mcp`), and an MCP elicitation suspends the node (mcp-tool-rounds.ts).
 */
@Injectable()
@NodeExecutor({ typeId: 'core.tool', replayPolicy: 'non-deterministic' })
export class CoreToolExecutor implements NodeExecutorProvider {
  private readonly log = new Logger('runs.core.tool');

  constructor(
    private readonly catalog: ToolCatalogService,
    private readonly launcher: RunLauncher,
    private readonly dispatch: ToolDispatchService,
  ) {}

  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    if (typeof config.toolId !== 'string' || !config.toolId) problems.push('core.tool needs config.toolId');
    // A value that is exactly one `{{...}}` placeholder is typed when the node runs (and checked then).
    if (config.arguments !== undefined && !isPlaceholder(config.arguments) && (typeof config.arguments !== 'object' || config.arguments === null || Array.isArray(config.arguments))) {
      problems.push('core.tool config.arguments must be an object');
    }
    if (config.calls !== undefined && !isPlaceholder(config.calls) && callCount(config.calls) === undefined) problems.push('core.tool config.calls must be an integer from 1 to 10');
    return problems;
  }

  async replayPolicyOf(config: Record<string, unknown>, principal: NodeExecutionContext['principal']): Promise<ToolReplayPolicy> {
    try {
      const entry = await this.catalog.entry(asPrincipal(principal), String(config.toolId));
      return entry.descriptor.replayPolicy ?? 'non-deterministic';
    } catch {
      return 'non-deterministic';
    }
  }

  /** The scopes of the tool the node calls and, for a `workflow` tool, the chain it starts as a child run. */
  async requiredScopesOf(config: Record<string, unknown>, scope: { tenant: string; workspace?: string }): Promise<{ scopes: string[]; childWorkflows: string[] }> {
    const toolId = config.toolId;
    if (typeof toolId !== 'string' || !toolId) return { scopes: [], childWorkflows: [] };
    const d = await this.catalog.descriptorOf(scope, toolId);
    if (!d) return { scopes: [], childWorkflows: [] };
    return { scopes: [...(d.auth?.scopes ?? [])], childWorkflows: d.source === 'workflow' ? [toolId.slice('workflow:'.length)] : [] };
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const toolId = String(ctx.config.toolId ?? '');
    const rawArgs = ctx.config.arguments ?? {};
    if (typeof rawArgs !== 'object' || rawArgs === null || Array.isArray(rawArgs)) throw new NodeExecutionError('invalid_arguments', 'The tool arguments are not an object.');
    const args = rawArgs as Record<string, unknown>;
    const calls = callCount(ctx.config.calls);
    if (calls === undefined) throw new NodeExecutionError('invalid_arguments', 'core.tool config.calls must be an integer from 1 to 10.');
    const principal = asPrincipal(ctx.principal);
    let entry: CatalogEntry;
    try {
      entry = await this.catalog.entry(principal, toolId);
    } catch (e) {
      if (e instanceof DomainError && e.status === 404) throw new NodeExecutionError('tool_not_found', `No tool "${toolId}" is visible to the run principal.`);
      throw e;
    }
    // The arguments against the tool's declared input schema, before anything is decided or called.
    checkToolArguments(entry, args);
    // Governed dispatch: nothing is opened or called before the policy allows it (or its gate is granted).
    const d = entry.descriptor;
    const verdict = await governedCall(this.dispatch, principal, { toolId: d.toolId, safetyTier: d.safetyTier, approval: d.approval }, ctx);
    const sessionId = randomUUID();
    const correlation = { correlationId: sessionId };
    let outcome: 'completed' | 'failed' | 'cancelled' = 'failed';
    let session: ToolSession | undefined;
    let costUsd = 0;
    let suspended = false;
    // An MCP elicitation can suspend the node only when nothing else holds its one interrupt.
    const interruptible = calls === 1 && verdict.decision !== 'approve';
    await ctx.emit('tool.session.opened', { sessionId, toolId }, correlation);
    try {
      let result: ToolCallResult = { status: 'ok' };
      // One session, `calls` calls in it (a multi-step interaction); the last call's result is the output.
      for (let i = 0; i < calls; i++) {
        const callId = randomUUID();
        const called = await ctx.emit(
          'agent.toolCalled',
          { agentId: RUN_AGENT_ID, toolName: toolId, callId, argsHash: argsHash(args), principal: principal.principal, transport: TRANSPORT[entry.descriptor.source] },
          correlation,
        );
        const started = process.hrtime.bigint();
        try {
          // One span per call (tool id and source kind, never the arguments); a remote source's
          // requests carry it as their traceparent.
          const source = entry.descriptor.source;
          result = await inSpan(
            'openwop.tool.call',
            { kind: TRANSPORT[source] === 'native' ? 'internal' : 'client', attributes: { 'openwop.run_id': ctx.runId, 'openwop.node_id': ctx.nodeId, 'openwop.tool_id': toolId, 'openwop.tool.source': source, 'openwop.tool.call_id': callId } },
            async (span) => {
              let r: ToolCallResult;
              if (source === 'workflow') {
                r = await this.callWorkflow(entry, principal, args, ctx);
              } else {
                session ??= await this.catalog.open(principal, entry, ctx.signal);
                r = isMcpRoundSession(session) ? await callMcpTool(session, args, ctx, interruptible) : await session.call(args, ctx.signal);
              }
              if (r.status !== 'ok') span?.fail(r.error?.code || 'tool_call_failed');
              return r;
            },
          );
        } catch (e) {
          if (e instanceof Suspend) {
            // The tool asked for input: the node waits on its interrupt and runs again once it is answered.
            suspended = true;
            await ctx.emit('agent.toolReturned', { agentId: RUN_AGENT_ID, toolName: toolId, callId, status: 'ok', inputRequired: true, durationMs: Number((process.hrtime.bigint() - started) / 1_000_000n) }, { ...correlation, causationId: called.eventId });
            throw e;
          }
          result = { status: 'error', error: { code: (e as { code?: string }).code ?? 'tool_call_failed', message: (e as Error).message } };
        }
        // A call that ended because the node was aborted (e.g. a child run cancelled with its parent) was cancelled, not failed.
        if (result.status !== 'ok' && ctx.signal.aborted) outcome = 'cancelled';
        const durationMs = Number((process.hrtime.bigint() - started) / 1_000_000n);
        // The cost the source declares for this call (RFC 0084), counted even when the call failed.
        if (typeof result.costUsd === 'number' && Number.isFinite(result.costUsd) && result.costUsd > 0) costUsd += result.costUsd;
        await ctx.emit(
          'agent.toolReturned',
          {
            agentId: RUN_AGENT_ID,
            toolName: toolId,
            callId,
            status: result.status === 'ok' ? 'ok' : 'error',
            durationMs,
            ...(result.status === 'ok' ? {} : { error: { code: result.error?.code || 'tool_call_failed', message: 'The tool call failed.' } }),
          },
          { ...correlation, causationId: called.eventId },
        );
        if (result.status !== 'ok') {
          throw Object.assign(new NodeExecutionError(result.error?.code || 'tool_call_failed', result.error?.message || `The call of ${toolId} failed.`), { costUsd });
        }
      }
      outcome = 'completed';
      const content = result.content;
      const outputs: Record<string, unknown> = content && typeof content === 'object' && !Array.isArray(content) ? { ...(content as Record<string, unknown>) } : { result: content ?? null };
      // Which server answered, at which MCP revision (the selected one, never just the requested one).
      if (isMcpRoundSession(session)) outputs._mcp = { serverId: session.mcp.serverId, tool: session.mcp.toolName, protocolVersion: session.mcp.protocolVersion };
      return { outputs, ...(costUsd ? { costUsd } : {}) };
    } finally {
      await session?.close().catch(() => undefined);
      // A suspended call is no failure: the session ends here and the node opens another when it runs again.
      if (suspended) outcome = 'cancelled';
      await ctx.emit('tool.session.closed', { sessionId, toolId, outcome, ...(suspended ? { suspended: true } : {}) }, correlation).catch((e: unknown) => this.log.warn({ msg: 'could not close the tool session bracket', err: (e as Error).message }));
    }
  }

  private async callWorkflow(entry: CatalogEntry, principal: Principal, args: Record<string, unknown>, ctx: NodeExecutionContext): Promise<ToolCallResult> {
    // A chain calling a chain: a child run of the same principal; its outputs are the result.
    const child = await this.launcher.startChild(principal, entry.descriptor.toolId.slice('workflow:'.length), args, ctx.runId, { nodeId: ctx.nodeId });
    const done = await this.launcher.awaitTerminal(principal, child, ctx.signal);
    // The child's cost is the parent's too.
    const costUsd = done.metrics?.openwopCost.usd ?? 0;
    if (done.status === 'completed') return { status: 'ok', content: done.outputs ?? {}, costUsd };
    return { status: 'error', error: { code: 'subrun_failed', message: `Child run ${child} ended ${done.status}.` }, costUsd };
  }
}

/** `config.calls`: how many calls the node's session makes (default 1, at most 10); undefined when invalid. */
function callCount(v: unknown): number | undefined {
  if (v === undefined || v === null) return 1;
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 10 ? v : undefined;
}
