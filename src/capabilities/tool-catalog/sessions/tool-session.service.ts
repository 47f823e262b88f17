import { createHash, randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ToolCallResult, ToolSession, ToolSourceKind } from '@openwop-host/plugin-sdk';
import { canonicalJson } from '../../../platform/artifacts/artifact-registry.service';
import { UnprocessableError } from '../../../platform/errors/domain-error';
import { EventLogService } from '../../../platform/events/event-log.service';
import { RunService } from '../../../platform/events/run.service';
import type { Principal } from '../../../platform/identity/principal';
import { TOOL_CATALOG_SETTINGS, ToolCatalogSettings } from '../tool-catalog.config';
import { CatalogEntry, ToolCatalogService } from '../tool-catalog.service';

/** The actor id written on RFC 0064 call events of host-driven sessions (3-256 chars). */
export const SESSION_AGENT_ID = 'openwop-host.tool-session';

export type SessionOutcome = 'completed' | 'failed';

export interface SessionRunRequest {
  toolId?: string;
  arguments?: Record<string, unknown>;
  /** How many calls the session makes (a session is a multi-step interaction). */
  calls?: number;
}

export interface SessionRunResult {
  runId: string;
  sessionId: string;
  toolId: string;
  outcome: SessionOutcome;
}

/** SHA-256 over the RFC 8785 canonical arguments: lets a reader pair calls without seeing content. */
export function argsHash(args: Record<string, unknown>): string {
  return `sha256:${createHash('sha256').update(canonicalJson(args), 'utf8').digest('hex')}`;
}

const TRANSPORT: Record<ToolSourceKind, 'mcp' | 'http' | 'native'> = {
  mcp: 'mcp',
  connector: 'http',
  'node-pack': 'native',
  workflow: 'native',
  'host-extension': 'native',
};

/**
 * The host's internal tool-invocation path. A session brackets its calls in the run's durable
 * event log: `tool.session.opened` → (`agent.toolCalled` → `agent.toolReturned`)+ →
 * `tool.session.closed`. Payloads are content-free (ids, argsHash, status, durationMs): arguments,
 * results and error texts stay with the caller.
 */
@Injectable()
export class ToolSessionService {
  private readonly log = new Logger('ToolSessions');

  constructor(
    private readonly catalog: ToolCatalogService,
    private readonly runs: RunService,
    private readonly events: EventLogService,
    @Inject(TOOL_CATALOG_SETTINGS) private readonly settings: ToolCatalogSettings,
  ) {}

  /** The tool a smoke session uses when none is named: the first invocable tool with safe sample arguments. */
  async defaultTool(principal: Principal): Promise<CatalogEntry> {
    for (const e of await this.catalog.entries(principal)) {
      if (e.source.provider.openSession && e.source.provider.sampleArguments?.(e.descriptor.toolId) !== undefined) return e;
    }
    throw new UnprocessableError('tool_not_invocable', 'No tool in your catalog can run a session without arguments.');
  }

  /**
   * Runs one session synchronously: every event is persisted before this resolves. The tool must
   * be in the caller's catalog (unknown and hidden ids are the same 404).
   */
  async run(principal: Principal, req: SessionRunRequest = {}): Promise<SessionRunResult> {
    const entry = req.toolId ? await this.catalog.entry(principal, req.toolId) : await this.defaultTool(principal);
    const provider = entry.source.provider;
    const toolId = entry.descriptor.toolId;
    if (!provider.openSession) {
      throw new UnprocessableError('tool_not_invocable', 'The source of this tool does not support invocation.', { toolId });
    }
    const args = req.arguments ?? provider.sampleArguments?.(toolId) ?? {};
    const calls = Math.max(1, Math.min(req.calls ?? 2, 10));
    const run = await this.runs.create(principal, 'tool-session', { toolId });
    const sessionId = randomUUID();
    const scope = { tenant: principal.tenant, workspace: principal.workspace };
    const correlation = { correlationId: sessionId };
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), Math.max(this.settings.sourceTimeoutMs, 1000) * (calls + 1));
    let outcome: SessionOutcome = 'completed';
    let session: ToolSession | undefined;
    try {
      await this.events.append(scope, run.runId, 'tool.session.opened', { sessionId, toolId }, correlation);
      try {
        session = await provider.openSession(toolId, { ...scope, principal: principal.principal, scopes: principal.scopes, signal: controller.signal });
      } catch (e) {
        this.log.warn({ msg: 'tool session could not be opened', toolId, runId: run.runId, err: (e as Error).message });
        outcome = 'failed';
      }
      for (let i = 0; session && i < calls; i++) {
        const callId = randomUUID();
        const called = await this.events.append(
          scope,
          run.runId,
          'agent.toolCalled',
          {
            agentId: SESSION_AGENT_ID,
            toolName: toolId,
            callId,
            argsHash: argsHash(args),
            principal: principal.principal,
            transport: TRANSPORT[entry.descriptor.source],
          },
          correlation,
        );
        const started = process.hrtime.bigint();
        let result: ToolCallResult;
        try {
          result = await session.call(args, controller.signal);
        } catch (e) {
          result = { status: 'error', error: { code: 'tool_call_failed', message: (e as Error).message } };
        }
        const durationMs = Number((process.hrtime.bigint() - started) / 1_000_000n);
        await this.events.append(
          scope,
          run.runId,
          'agent.toolReturned',
          { agentId: SESSION_AGENT_ID, toolName: toolId, callId, status: result.status === 'ok' ? 'ok' : 'error', durationMs },
          { ...correlation, causationId: called.eventId },
        );
        if (result.status !== 'ok') {
          outcome = 'failed';
          break;
        }
      }
    } finally {
      clearTimeout(timer);
      await session?.close().catch((e: unknown) => this.log.warn({ msg: 'tool session close failed', toolId, err: (e as Error).message }));
      await this.events.append(scope, run.runId, 'tool.session.closed', { sessionId, toolId, outcome }, correlation);
      await this.runs.setStatus(scope, run.runId, outcome === 'completed' ? 'completed' : 'failed');
    }
    return { runId: run.runId, sessionId, toolId, outcome };
  }
}
