import { Injectable } from '@nestjs/common';
import { requireDelegable } from '../../platform/identity/delegation';
import type { Principal } from '../../platform/identity/principal';
import { RunCreationService } from './run-creation.service';
import { RunEngineService } from './engine/run-engine.service';
import type { RunSnapshot } from './run-snapshot';
import { RunsService } from './runs.service';
import { RunLauncher } from './run-launcher.service';

/** The statuses in which a run is still moving by itself: a caller waiting for it to settle keeps waiting. */
const MOVING = new Set(['pending', 'running', 'cancelling']);

/** How a transport other than REST marks the runs it starts. */
export interface TransportRunOrigin {
  transport: 'mcp';
  trustBoundary: 'untrusted';
}

/**
 * Runs that a transport other than REST starts for its caller and waits on (the MCP mount's
 * `tools/call`, `resources/read`, `prompts/get`): created exactly as `POST /v1/runs` creates them,
 * after checking that the caller holds every scope the chain needs, and marked with their origin
 * (`run.started.transport`, the untrusted trust boundary).
 */
@Injectable()
export class TransportRunsService {
  constructor(
    private readonly creation: RunCreationService,
    private readonly runs: RunsService,
    private readonly launcher: RunLauncher,
    private readonly engine: RunEngineService,
  ) {}

  /** The scopes a caller needs to start `workflowId` (runs:create and every scope its chain's nodes need). */
  requiredScopes(principal: Principal, workflowId: string): Promise<string[]> {
    return this.launcher.requiredScopes(principal, workflowId);
  }

  async start(principal: Principal, workflowId: string, inputs: Record<string, unknown>, origin: TransportRunOrigin): Promise<RunSnapshot> {
    requireDelegable(principal, await this.launcher.requiredScopes(principal, workflowId), `A run of "${workflowId}"`);
    const { snapshot } = await this.creation.create(principal, { workflowId, inputs }, undefined, undefined, undefined, { requireCreateScope: true, ...origin });
    return snapshot;
  }

  /**
   * Waits until the run stops moving by itself (terminal, waiting on an interrupt or an event, or
   * paused) or `timeoutMs` passes, and answers its snapshot then. Nothing is cancelled on timeout.
   * `onProgress` hears each snapshot in which more nodes have completed than in the one before.
   */
  async settled(principal: Principal, runId: string, timeoutMs: number, opts: { signal?: AbortSignal; onProgress?: (snap: RunSnapshot, completedNodes: number) => void } = {}): Promise<RunSnapshot> {
    const until = Date.now() + timeoutMs;
    let completed = 0;
    for (;;) {
      const snap = await this.runs.get(principal, runId);
      const done = Object.values(snap.nodeStates ?? {}).filter((n) => n.status === 'completed').length;
      if (done > completed && opts.onProgress && MOVING.has(snap.status)) opts.onProgress(snap, done);
      completed = Math.max(completed, done);
      if (!MOVING.has(snap.status) || Date.now() >= until || opts.signal?.aborted) return snap;
      await this.engine.waitLocal(runId, Math.min(200, Math.max(1, until - Date.now())));
    }
  }

  get(principal: Principal, runId: string): Promise<RunSnapshot> {
    return this.runs.get(principal, runId);
  }

  cancel(principal: Principal, runId: string, reason: string): Promise<RunSnapshot> {
    return this.runs.cancel(principal, runId, reason);
  }
}
