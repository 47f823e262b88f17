import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Principal, TenantScope } from '../identity/principal';

/** The scope every run needs, whoever starts it. */
export const RUN_CREATE_SCOPE = 'runs:create';

/** What a capability needs to start and watch a workflow run without importing the run engine. */
export interface WorkflowRunLauncher {
  /**
   * Creates a run of `workflowId` for the principal, inside `manager`'s transaction when given (the
   * run starts once `start` is called after the commit). Rejects with the same domain errors as
   * `POST /v1/runs` (404 unknown workflow, 422 not executable, 400 bounds), and 403 `forbidden` when
   * the principal does not hold `runs:create` (standing work whose delegation no longer holds it); with `recordRefusal`,
   * such a refusal is instead recorded as a `failed` run carrying its code, and that run is answered.
   * Anything else (the database unreachable) still rejects.
   */
  launch(
    principal: Principal,
    req: { workflowId: string; inputs?: Record<string, unknown>; configurable?: Record<string, unknown>; metadata?: Record<string, unknown> },
    opts?: { idempotencyKey?: string; manager?: EntityManager; recordRefusal?: boolean },
  ): Promise<{ runId: string }>;
  /**
   * The scopes a run of `workflowId` in `scope` needs: `runs:create`, the scopes its nodes declare
   * (the tools they call) and their RFC 0151 inverse actions declare, and the same for every chain
   * it starts as a child run (from a forward node or an inverse action). A chain that is not
   * installed contributes nothing beyond `runs:create` (its run would fail anyway). Sorted.
   */
  requiredScopes(scope: TenantScope, workflowId: string, manager?: EntityManager): Promise<string[]>;
  /** Starts executing a launched run on this replica (other replicas would claim it at their next pass). */
  start(runId: string): void;
  /** The run's status and, once terminal, its outputs or error (undefined: no such run of the scope). */
  status(scope: TenantScope, runId: string): Promise<{ status: string; outputs?: Record<string, unknown>; error?: { code: string; message: string }; costUsd?: number } | undefined>;
}

/**
 * The seam between capabilities that start workflow runs (automations, goal workers, tool
 * sessions) and the run engine that executes them: the runs capability registers itself here, so
 * the others depend on the platform, not on each other.
 */
@Injectable()
export class RunLauncherRegistry {
  private launcher?: WorkflowRunLauncher;

  register(launcher: WorkflowRunLauncher): void {
    this.launcher = launcher;
  }

  /** The run engine, or undefined when the runs capability is not mounted. */
  get(): WorkflowRunLauncher | undefined {
    return this.launcher;
  }
}
