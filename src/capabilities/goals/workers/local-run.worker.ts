import { Injectable } from '@nestjs/common';
import { GoalRunOutcome, GoalWorker, GoalWorkerProvider, GoalWorkerStartContext, GoalWorkSubject, GoalWorkTarget } from '@openwop-host/plugin-sdk';
import { RunLauncherRegistry, WorkflowRunLauncher } from '../../../platform/run-ports/run-launcher';
import type { Principal } from '../../../platform/identity/principal';
import { GoalDelegationService } from '../goal-delegation.service';
import { InvariantViolation, WiringFault } from '../../../platform/errors/internal-fault';

export const LOCAL_RUN_WORKER = 'local-run';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/**
 * The workflow a goal's runs execute: its `workflowId` (host extension), else a `continuation.armRef`
 * that names a workflow rather than one of the host's own arms (`goal:<id>:...`).
 */
export function workflowOf(goal: Pick<GoalWorkSubject, 'workflowId' | 'armRef'>): string | undefined {
  if (goal.workflowId) return goal.workflowId;
  if (goal.armRef && !goal.armRef.startsWith('goal:')) return goal.armRef;
  return undefined;
}

/**
 * The default goal worker when no remote runtime is configured: each iteration starts a LOCAL run of
 * the goal's chain on this host's run engine (through the platform run launcher, so goals do not
 * depend on the runs capability), then follows it on later ticks until it is terminal and hands its
 * `outputs`, status and reported cost to the goal's judge. The run belongs to the goal's tenant and
 * workspace and is started as the goal's creator, with the scopes the creator delegated to the goal
 * that its API key still holds (GoalDelegationService). The iteration's idempotency key makes a
 * replica that takes over a crashed replica's iteration answer the same run.
 */
@Injectable()
@GoalWorker({ id: LOCAL_RUN_WORKER, description: 'Starts a local run of the goal\'s workflow chain on this host\'s run engine.' })
export class LocalRunGoalWorker implements GoalWorkerProvider {
  readonly pollIntervalMs = 500;

  constructor(
    private readonly launchers: RunLauncherRegistry,
    private readonly delegation: GoalDelegationService,
  ) {}

  /** Available when the run engine is mounted. */
  available(): boolean {
    return this.launchers.get() !== undefined;
  }

  accepts(goal: GoalWorkTarget): string | undefined {
    return goal.workflowId ? undefined : 'the goal names no workflowId for its runs';
  }

  /** What a run of the goal's chain needs (its tools' scopes, child chains included). */
  async requiredScopes(goal: GoalWorkTarget): Promise<string[]> {
    const workflowId = workflowOf(goal);
    const launcher = this.launchers.get();
    if (!workflowId || !launcher) return [];
    return launcher.requiredScopes(goal.workspace ? { tenant: goal.tenant, workspace: goal.workspace } : { tenant: goal.tenant }, workflowId);
  }

  async start(goal: GoalWorkSubject, ctx: GoalWorkerStartContext): Promise<{ runId: string }> {
    const workflowId = workflowOf(goal);
    if (!workflowId) throw new InvariantViolation('the goal names no workflow to run');
    const scopes = await this.delegation.scopesFor(goal.goalId, goal.tenant);
    return this.launcher().launch(
      ownerOf(goal, scopes),
      {
        workflowId,
        inputs: { goalId: goal.goalId, objective: goal.objective, iteration: goal.iteration },
        // The goal's cost bound holds within a run too: the run's RFC 0084 budget is what is left of it.
        ...(goal.remainingCostUsd !== undefined ? { configurable: { budget: { maxCostUsd: goal.remainingCostUsd } } } : {}),
      },
      // A chain that cannot run (uninstalled, not executable) is a failed run of this iteration, judged
      // and counted against the goal's bounds, not an error retried forever.
      { idempotencyKey: `goal-iteration:${ctx.idempotencyKey}`.slice(0, 255), recordRefusal: true },
    );
  }

  async collect(goal: GoalWorkSubject, runId: string): Promise<GoalRunOutcome | undefined> {
    const scope = goal.workspace ? { tenant: goal.tenant, workspace: goal.workspace } : { tenant: goal.tenant };
    const run = await this.launcher().status(scope, runId);
    // A run of another scope is never read; one that vanished counts as failed rather than polled forever.
    if (!run) return { runId, status: 'failed' };
    if (!TERMINAL.has(run.status)) return undefined;
    const costUsd = typeof run.costUsd === 'number' && Number.isFinite(run.costUsd) && run.costUsd >= 0 ? run.costUsd : undefined;
    return { runId, status: run.status, ...(run.status === 'completed' ? { output: run.outputs ?? {} } : {}), ...(costUsd !== undefined ? { costUsd } : {}) };
  }

  private launcher(): WorkflowRunLauncher {
    const l = this.launchers.get();
    if (!l) throw new WiringFault('the run engine is not mounted');
    return l;
  }
}

function ownerOf(goal: GoalWorkSubject, scopes: ReadonlySet<string>): Principal {
  return { tenant: goal.tenant, workspace: goal.workspace, principal: goal.principal ?? 'system', scopes, kind: 'system' };
}
