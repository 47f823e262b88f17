import { Injectable } from '@nestjs/common';
import { requireDelegable } from '../../platform/identity/delegation';
import type { Principal } from '../../platform/identity/principal';
import { RunCreationService } from './run-creation.service';
import type { RunSnapshot } from './run-snapshot';
import { RunsService } from './runs.service';
import { RunLauncher } from './run-launcher.service';

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
   * Waits until the run stops moving by itself or `timeoutMs` passes (RunsService.settled, which
   * `POST /v1/runs` with `Prefer: wait` uses too), and answers its snapshot then.
   */
  settled(principal: Principal, runId: string, timeoutMs: number, opts: { signal?: AbortSignal; onProgress?: (snap: RunSnapshot, completedNodes: number) => void } = {}): Promise<RunSnapshot> {
    return this.runs.settled(principal, runId, timeoutMs, opts);
  }

  get(principal: Principal, runId: string): Promise<RunSnapshot> {
    return this.runs.get(principal, runId);
  }

  cancel(principal: Principal, runId: string, reason: string): Promise<RunSnapshot> {
    return this.runs.cancel(principal, runId, reason);
  }
}
