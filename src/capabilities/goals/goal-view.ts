import type { GoalEntity, GoalRunEntity } from './goal.entity';

/** The wire Goal (schemas/openwop/goal.schema.json; closed at every level). */
export interface GoalView {
  id: string;
  objective: string;
  state: GoalEntity['state'];
  completion: {
    check: GoalEntity['judge'];
    verifierRef: string | null;
    lastVerdict: { satisfied: boolean; confidence: number; runId: string } | null;
  };
  continuation: { mode: GoalEntity['continuationMode']; armRef: string | null };
  bounds: { maxLoopIterations?: number; runTimeoutMs?: number; maxCostUsd?: number };
  progress: { iterations: number; contributingRunIds: string[] };
  owner: { tenant: string; workspace?: string; principal?: string };
  createdAt: string;
  updatedAt: string;
}

/**
 * Host-side continuation status of a goal, beside the wire Goal (which has no field for it): whether
 * continuation is paused, when the scheduler looks at it next, the accumulated cost, the schedule,
 * the commitment's instant, the worker and workflow, the criteria and the run in flight.
 */
export interface GoalStatusView {
  goalId: string;
  paused: boolean;
  nextDueAt: string | null;
  accumulatedCostUsd: number;
  schedule: GoalEntity['schedule'];
  /** Commitment continuation: when the armed commitment fires (null once it fired, until re-armed). */
  commitmentAt: string | null;
  worker: string | null;
  /** The workflow the goal's runs execute (host extension), when it names one. */
  workflowId: string | null;
  criteria: Record<string, unknown> | null;
  pendingRunId: string | null;
  closedAt: string | null;
}

export function toGoalView(g: GoalEntity): GoalView {
  const owner: GoalView['owner'] = { tenant: g.tenant };
  if (g.workspace) owner.workspace = g.workspace;
  if (g.principal) owner.principal = g.principal;
  return {
    id: g.id,
    objective: g.objective,
    state: g.state,
    completion: {
      check: g.judge,
      verifierRef: g.verifierRef ?? null,
      lastVerdict: g.lastVerdict ? { satisfied: g.lastVerdict.satisfied, confidence: g.lastVerdict.confidence, runId: g.lastVerdict.runId } : null,
    },
    continuation: { mode: g.continuationMode, armRef: g.armRef ?? null },
    bounds: { ...g.bounds },
    progress: { iterations: g.iterations, contributingRunIds: [...(g.contributingRunIds ?? [])] },
    owner,
    createdAt: new Date(g.createdAt).toISOString(),
    updatedAt: new Date(g.updatedAt).toISOString(),
  };
}

export function toGoalStatusView(g: GoalEntity): GoalStatusView {
  return {
    goalId: g.id,
    paused: g.paused,
    nextDueAt: g.nextDueAt ? new Date(g.nextDueAt).toISOString() : null,
    accumulatedCostUsd: g.costUsd,
    schedule: g.schedule,
    commitmentAt: g.commitmentAt ? new Date(g.commitmentAt).toISOString() : null,
    worker: g.worker,
    workflowId: g.workflowId ?? null,
    criteria: g.criteria,
    pendingRunId: g.pendingRunId,
    closedAt: g.closedAt ? new Date(g.closedAt).toISOString() : null,
  };
}

/** One contributing run of a goal as recorded: its verdict (null when a bound closed the goal first) and cost. */
export interface GoalRunView {
  runId: string;
  ordinal: number;
  status: string;
  costUsd: number | null;
  satisfied: boolean | null;
  confidence: number | null;
  recordedAt: string;
}

export function toGoalRunView(r: GoalRunEntity): GoalRunView {
  return {
    runId: r.runId,
    ordinal: r.ordinal,
    status: r.status,
    costUsd: r.costUsd,
    satisfied: r.satisfied,
    confidence: r.confidence,
    recordedAt: new Date(r.recordedAt).toISOString(),
  };
}
