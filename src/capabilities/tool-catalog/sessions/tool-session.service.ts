import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { canonicalJson } from '../../../platform/artifacts/artifact-registry.service';
import { UnprocessableError } from '../../../platform/errors/domain-error';
import { EventLogService } from '../../../platform/events/event-log.service';
import { RunLauncherRegistry } from '../../../platform/run-ports/run-launcher';
import type { Principal } from '../../../platform/identity/principal';
import { ToolDispatchService } from '../dispatch/tool-dispatch.service';
import { TOOL_CATALOG_SETTINGS, ToolCatalogSettings } from '../tool-catalog.config';
import { CatalogEntry, ToolCatalogService } from '../tool-catalog.service';

/** The workflow the seam runs: one `core.tool` node (the run engine serves it while the test seams are on). */
export const TOOL_SESSION_WORKFLOW = 'openwop-host.tool-session';

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

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/**
 * The tool-session seam (RFC 0078 §D) as a thin wrapper over a real run: it checks the tool is in
 * the caller's catalog and invocable, starts a run of the one-node `core.tool` chain
 * (`openwop-host.tool-session`) as the caller through the platform run launcher, and answers once
 * the run is terminal, so its whole event bracket is persisted: `tool.session.opened` →
 * (`agent.toolCalled` → `agent.toolReturned`)+ → `tool.session.closed`, inside the run's own
 * lifecycle events. Bracket payloads are content-free (ids, argsHash, status, durationMs). The run
 * is an ordinary engine run (GET /v1/runs/{id}, its events, its terminal status). The dispatch policy
 * is asked first: only an allowed call starts a run.
 */
@Injectable()
export class ToolSessionService {
  constructor(
    private readonly catalog: ToolCatalogService,
    private readonly launchers: RunLauncherRegistry,
    private readonly events: EventLogService,
    @Inject(TOOL_CATALOG_SETTINGS) private readonly settings: ToolCatalogSettings,
    private readonly dispatch: ToolDispatchService,
  ) {}

  /** The tool a smoke session uses when none is named: the first invocable tool with safe sample arguments. */
  async defaultTool(principal: Principal): Promise<CatalogEntry> {
    for (const e of await this.catalog.entries(principal)) {
      if (this.catalog.invocable(e) && e.source.provider.sampleArguments?.(e.descriptor.toolId) !== undefined) return e;
    }
    throw new UnprocessableError('tool_not_invocable', 'No tool in your catalog can run a session without arguments.');
  }

  /**
   * Runs one session to its end: every event is persisted before this resolves. The tool must be in
   * the caller's catalog (unknown and hidden ids are the same 404).
   */
  async run(principal: Principal, req: SessionRunRequest = {}): Promise<SessionRunResult> {
    const entry = req.toolId ? await this.catalog.entry(principal, req.toolId) : await this.defaultTool(principal);
    const provider = entry.source.provider;
    const toolId = entry.descriptor.toolId;
    if (!this.catalog.invocable(entry) && entry.descriptor.source !== 'workflow') {
      throw new UnprocessableError('tool_not_invocable', 'The source of this tool does not support invocation.', { toolId });
    }
    // Governed dispatch: the seam answers synchronously and cannot wait for an approval gate, so a call
    // the policy denies (403 tool_dispatch_denied) or sends to approval (409 tool_approval_required) is
    // refused here, recorded, and no run starts. An allowed call is decided and recorded by its node.
    const d = entry.descriptor;
    await this.dispatch.requireAllowed(principal, { toolId, safetyTier: d.safetyTier, approval: d.approval }, 'session');
    const launcher = this.launchers.get();
    if (!launcher) throw new UnprocessableError('run_engine_unavailable', 'This host runs no run engine, so it cannot run a tool session.');
    const args = req.arguments ?? provider.sampleArguments?.(toolId) ?? {};
    const calls = Math.max(1, Math.min(req.calls ?? 2, 10));
    const budgetMs = Math.max(this.settings.sourceTimeoutMs, 1000) * (calls + 1);
    const { runId } = await launcher.launch(principal, { workflowId: TOOL_SESSION_WORKFLOW, inputs: { toolId, arguments: args, calls }, configurable: { runTimeoutMs: budgetMs } });
    const scope = principal.workspace ? { tenant: principal.tenant, workspace: principal.workspace } : { tenant: principal.tenant };
    // The run bounds itself (run_timeout); the margin covers writing its terminal events.
    const until = Date.now() + budgetMs + 5000;
    let status = (await launcher.status(scope, runId))?.status ?? 'failed';
    for (let wait = 5; !TERMINAL.has(status) && Date.now() < until; wait = Math.min(wait * 2, 100)) {
      await new Promise((r) => setTimeout(r, wait));
      status = (await launcher.status(scope, runId))?.status ?? 'failed';
    }
    const [opened] = await this.events.read(scope, runId, { type: 'tool.session.opened', limit: 1 });
    const sessionId = typeof opened?.payload?.sessionId === 'string' ? opened.payload.sessionId : '';
    return { runId, sessionId, toolId, outcome: status === 'completed' ? 'completed' : 'failed' };
  }
}
