import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { McpCallToolResult, McpListToolsResult, McpReadResourceResult, NodeExecutionContext, NodeExecutionError, NodeMcp } from '@openwop-host/plugin-sdk';
import type { Principal } from '../../../platform/identity/principal';
import { argsHash, McpCaller, McpHostService, ToolDispatchService } from '../../tool-catalog';
import { RUN_ENGINE_AGENT_ID as RUN_AGENT_ID } from './node-http-audit';
import { Suspend } from './run-gates';
import { governedCall } from '../executors/governed-call';
import { mcpToolRounds } from '../executors/mcp-tool-rounds';

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

function requireString(v: unknown, what: string): string {
  if (typeof v !== 'string' || !v) throw new NodeExecutionError('invalid_arguments', `ctx.mcp needs ${what}, a non-empty string.`, { service: 'mcp' });
  return v;
}

/**
 * Gives a node's context its `ctx.mcp` (plugin SDK `NodeMcp`, RFC 0204 §A), bound to the run's
 * principal and tenant: the servers the operator configured for the tenant, through the tool
 * catalog's `McpHostService`, each answer the server's result unaltered.
 *
 * `callTool` is governed like a `core.tool` call: the tenant's dispatch policy first (deny fails
 * `tool_dispatch_denied`; approve waits on an approval gate, `approval_denied` when rejected; each
 * governed decision recorded), then the pinned-definition hold (`mcp_tool_held`), then the call, every
 * round one of the node's effects (`ctx.effect`, keyed by server, tool and the pack's idempotency
 * key), so a node executed again reads a recorded round instead of calling again and a replay calls
 * nothing. A tool asking for input (MRTR) is asked as the node's clarification interrupt and retried
 * with the answer (mcp-tool-rounds.ts), when the node has not used its one interrupt of this execution
 * (`ctx.interrupt`, `ctx.awaitApproval`, an approval of the policy); otherwise the call fails
 * `mcp_input_unsupported`. An `InputRequiredResult` never reaches the node. Each call is audited in the run's log
 * like a `core.tool` call (RFC 0064 toolHooks.prePostEvents): `agent.toolCalled {transport: "mcp", callId, argsHash,
 * principal}` and the `agent.toolReturned` of the same `callId`.
 */
@Injectable()
export class NodeMcpBinder {
  constructor(
    private readonly host: McpHostService,
    private readonly dispatch: ToolDispatchService,
  ) {}

  bind(ctx: NodeExecutionContext, principal: Principal): void {
    let interruptUsed = false;
    const { interrupt, awaitApproval } = ctx;
    ctx.interrupt = (req) => {
      interruptUsed = true;
      return interrupt(req);
    };
    ctx.awaitApproval = (req) => {
      interruptUsed = true;
      return awaitApproval(req);
    };
    const caller: McpCaller = {
      tenant: principal.tenant,
      workspace: principal.workspace,
      principal: { principal: principal.principal, kind: principal.kind, ...(principal.keyId ? { keyId: principal.keyId } : {}), scopes: principal.scopes },
    };
    const tenant = principal.tenant;
    const mcp: NodeMcp = {
      callTool: async (req) => {
        const name = requireString(req?.name, 'name');
        const args = req.arguments ?? {};
        if (!isObject(args)) throw new NodeExecutionError('invalid_arguments', 'ctx.mcp.callTool arguments must be an object.', { service: 'mcp' });
        if (req.idempotencyKey !== undefined && typeof req.idempotencyKey !== 'string') throw new NodeExecutionError('invalid_arguments', 'ctx.mcp.callTool idempotencyKey must be a string.', { service: 'mcp' });
        const cfg = await this.host.server(req.serverId, tenant);
        await governedCall(this.dispatch, principal, this.host.dispatchSubject(cfg, name), ctx);
        await this.host.assertCallable(cfg, caller, name, ctx.signal);
        const host = this.host;
        const session = {
          mcp: {
            serverId: cfg.id,
            toolName: name,
            get protocolVersion() {
              return host.revisionOf(cfg.id);
            },
          },
          round: (a: Record<string, unknown>, retry: Parameters<McpHostService['callToolRound']>[4], signal: AbortSignal) => host.callToolRound(cfg, caller, name, a, retry, signal),
        };
        const effectKey = `mcp:tools/call:${cfg.id}/${name}${req.idempotencyKey ? `#${req.idempotencyKey}` : ''}`;
        const callId = randomUUID();
        const who = { agentId: RUN_AGENT_ID, toolName: name, callId };
        const called = await ctx.emit('agent.toolCalled', { ...who, argsHash: argsHash(args), principal: principal.principal, transport: 'mcp' }, { correlationId: callId });
        const after = { correlationId: callId, causationId: called.eventId };
        const started = process.hrtime.bigint();
        const ms = () => Number((process.hrtime.bigint() - started) / 1_000_000n);
        let r: Awaited<ReturnType<typeof mcpToolRounds>>;
        try {
          r = await mcpToolRounds(session, args, ctx, { interruptible: !interruptUsed, effectKey });
        } catch (e) {
          const returned = e instanceof Suspend ? { status: 'ok', inputRequired: true } : { status: 'error', error: { code: (e as { code?: string }).code || 'tool_call_failed', message: 'The tool call failed.' } };
          await ctx.emit('agent.toolReturned', { ...who, ...returned, durationMs: ms() }, after);
          throw e;
        }
        await ctx.emit('agent.toolReturned', { ...who, durationMs: ms(), ...('failed' in r ? { status: 'error', error: { code: (r.failed as { code?: string }).code || 'tool_call_failed', message: 'The tool call failed.' } } : { status: 'ok' }) }, after);
        if ('failed' in r) throw r.failed;
        return r.result as McpCallToolResult;
      },
      listTools: async (req) => {
        const cfg = await this.host.server(req?.serverId, tenant);
        if (req.cursor !== undefined && typeof req.cursor !== 'string') throw new NodeExecutionError('invalid_arguments', 'ctx.mcp.listTools cursor must be a string.', { service: 'mcp' });
        return (await this.host.listTools(cfg, caller, req.cursor, ctx.signal)) as McpListToolsResult;
      },
      readResource: async (req) => {
        const cfg = await this.host.server(req?.serverId, tenant);
        return (await this.host.readResource(cfg, caller, requireString(req.uri, 'uri'), ctx.signal)) as McpReadResourceResult;
      },
      serverHealth: async (req) => this.host.serverHealth(await this.host.server(req?.serverId, tenant), caller, ctx.signal),
    };
    ctx.mcp = mcp;
  }
}
