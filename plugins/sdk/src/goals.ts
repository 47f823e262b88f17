import { defineExtensionPoint } from './extension-point';

/**
 * Standing goals (RFC 0097) have two extension points:
 *
 * - a **goal judge** decides whether a contributing run satisfied a goal. Built in: `host` (the run's
 *   output must satisfy the goal's JSON Schema criteria) and `verifier` (the run's RFC 0090
 *   `agent.verified` event). A plugin judge for `check: "verifier"` with an `id` equal to a goal's
 *   `completion.verifierRef` is used for that goal instead of the event-based one.
 * - a **goal worker** re-engages work for a goal on its schedule: it starts a run and later reports the
 *   run's outcome. Built in: `local-run` (a run of the goal's chain on the host's own run engine, the
 *   default) and `openwop-runtime` (a configured remote OpenWOP runtime over REST).
 *
 * The host records each verdict once per run and never asks the judge twice about the same run.
 */

/** The goal as a judge or worker sees it: no credentials, no other tenant's data. */
export interface GoalWorkSubject {
  goalId: string;
  tenant: string;
  workspace?: string;
  /** Id of the principal that created the goal (not a credential); a worker that starts runs starts them as this principal. */
  principal?: string;
  /** SR-1 redaction-safe objective text. */
  objective: string;
  /** 1-based number of the iteration being worked on (contributing runs judged so far + 1). */
  iteration: number;
  /** The goal's continuation arm (`continuation.armRef`: the RFC 0052 job, RFC 0068 commitment or RFC 0060 heartbeat). */
  armRef?: string;
  /**
   * The workflow (chain) the goal asked its runs to execute (host extension `workflowId` of the goal),
   * when it named one. A worker that runs workflows uses it, else its own configured workflow.
   */
  workflowId?: string;
  /**
   * Since 1.9: what is left of the goal's `bounds.maxCostUsd` (its accumulated cost deducted), when the goal has a
   * cost bound. A worker that starts runs gives each run this budget (the local-run worker: `configurable.budget`).
   */
  remainingCostUsd?: number;
}

/** A goal a worker is asked to serve, when it is created or edited (see {@link GoalWorkerProvider.accepts}). */
export interface GoalWorkTarget {
  tenant: string;
  workspace?: string;
  mode: 'schedule' | 'commitment' | 'heartbeat';
  workflowId?: string;
}

/** An RFC 0090 `agent.verified` verdict (content-free). */
export interface GoalRunVerification {
  agentId?: string;
  verdict: 'pass' | 'fail' | 'revise';
  confidence?: number;
}

/** What the host knows about a finished contributing run. */
export interface GoalRunOutcome {
  runId: string;
  /** Terminal status of the run (`completed`, `failed`, `cancelled`, or `reported` for a run reported by a client). */
  status: string;
  /** The run's output (what the `host` judge checks against the goal's criteria). */
  output?: unknown;
  /** Cost of this run in USD (RFC 0084), accumulated once per run against `bounds.maxCostUsd`. */
  costUsd?: number;
  /** The run's last RFC 0090 verifier verdict, when the worker could read it. */
  verification?: GoalRunVerification;
  /**
   * The run raised an RFC 0044 confidence-escalation interrupt (kind `low-confidence`) and waits for a
   * human: the goal becomes `escalated` and its continuation stops. Such a run need not be terminal.
   */
  escalated?: boolean;
}

export interface GoalJudgeInput {
  goal: GoalWorkSubject & {
    /** JSON Schema completion criteria (host judge). */
    criteria?: Record<string, unknown>;
    /** RFC 0090 verifier id (verifier judge). */
    verifierRef?: string | null;
  };
  run: GoalRunOutcome;
}

export interface GoalVerdict {
  satisfied: boolean;
  /** Confidence in [0, 1]. */
  confidence: number;
}

/**
 * A judge. Throw {@link GoalVerdictUnavailable} when no verdict can be given yet (for example the run
 * has no `agent.verified` event): nothing is recorded and the run may be reported again later. Any
 * other error fails closed: the goal is never completed by an error.
 */
export interface GoalJudgeProvider {
  evaluate(input: GoalJudgeInput): Promise<GoalVerdict> | GoalVerdict;
}

export class GoalVerdictUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GoalVerdictUnavailable';
  }
}

/** `check` is the `completion.check` the judge serves; `id` (verifier judges) matches `completion.verifierRef`. */
export const GoalJudge = defineExtensionPoint<{ check: 'host' | 'verifier'; id?: string }>('goal-judge');

export interface GoalWorkerStartContext {
  /**
   * Stable for one iteration of one goal: a worker MUST pass it to the runtime as the idempotency key
   * (or dedupe on it), so a replica that takes over a crashed replica's iteration does not start a
   * second run for it.
   */
  idempotencyKey: string;
  signal: AbortSignal;
}

/** What a heartbeat predicate observed on one tick (RFC 0060). */
export interface GoalHeartbeatObservation {
  /**
   * The observed state: an opaque JSON value the host persists (size-capped) and hands back as
   * `priorState` on the next tick. The host compares it with the prior state: only a transition
   * may start a run.
   */
  state: unknown;
  /** On a transition, whether to start a run (default true). An unchanged tick never starts one. */
  enqueue?: boolean;
}

export interface GoalHeartbeatContext {
  /** The state the previous tick observed (null before the first tick). */
  priorState: unknown;
  /** Aborted when the evaluation exceeds the host's heartbeat runtime budget. */
  signal: AbortSignal;
}

/**
 * A worker. `start` begins one run for a goal iteration and returns its id quickly; `collect` is
 * called on later scheduler ticks and returns the outcome once the run is terminal (undefined while
 * it still runs). Neither may block for long: a tick serves many goals.
 */
export interface GoalWorkerProvider {
  /** Whether the worker can serve goals now (e.g. it is configured); an unavailable worker is not offered. */
  available?(): boolean;
  /**
   * Optional: whether this worker can serve a goal, asked when a goal chooses it (create, edit).
   * Answer a reason to refuse (the client gets 422 `worker_rejected` with it), undefined to accept;
   * e.g. a worker that starts workflow runs refuses a goal that names no workflow when it has none configured.
   */
  accepts?(goal: GoalWorkTarget): string | undefined;
  /**
   * Optional: the scopes a goal's runs will act with beyond `runs:create` (which every worker needs),
   * asked when a goal is created or its work changes; the goal's creator must hold them all and the
   * goal's delegation records exactly those. Default: none.
   */
  requiredScopes?(goal: GoalWorkTarget): Promise<string[]>;
  /** How soon to ask `collect` again about a run that is still running (default 1000 ms). */
  readonly pollIntervalMs?: number;
  start(goal: GoalWorkSubject, ctx: GoalWorkerStartContext): Promise<{ runId: string }>;
  collect(goal: GoalWorkSubject, runId: string, signal: AbortSignal): Promise<GoalRunOutcome | undefined>;
  /**
   * Optional: the cheap, idempotent predicate of `heartbeat` continuation (RFC 0060). Called on each
   * heartbeat tick while no run is in flight; it must observe external state and cause no side
   * effect. A worker without `probe` does not serve heartbeat goals.
   */
  probe?(goal: GoalWorkSubject, ctx: GoalHeartbeatContext): Promise<GoalHeartbeatObservation>;
}

/** `id` is what a goal names in its `worker` field (e.g. `openwop-runtime`). */
export const GoalWorker = defineExtensionPoint<{ id: string; description?: string }>('goal-worker');

export interface GoalWorkerContractOptions {
  subject?: GoalWorkSubject;
  /** How many times `collect` is asked before giving up on a terminal outcome (default 50). */
  maxCollects?: number;
  /** Wait between collects (default: the worker's pollIntervalMs, else 100 ms). */
  waitMs?: number;
}

/**
 * Contract test kit for goal workers: runs one iteration against the worker and returns the
 * contract violations (empty when it conforms). It checks that `start` answers a run id, that
 * starting twice with one idempotency key answers the same run (the host relies on it to take over a
 * crashed replica's iteration without a second run), and that `collect` reaches a terminal outcome
 * for that run with a sane cost.
 */
export async function checkGoalWorkerContract(worker: GoalWorkerProvider, opts: GoalWorkerContractOptions = {}): Promise<string[]> {
  const problems: string[] = [];
  const subject: GoalWorkSubject = opts.subject ?? { goalId: 'contract-goal', tenant: 'contract-tenant', objective: 'contract check', iteration: 1 };
  const signal = new AbortController().signal;
  const key = `${subject.goalId}:contract-${Date.now().toString(36)}`;
  const first = await worker.start(subject, { idempotencyKey: key, signal });
  if (!first || typeof first.runId !== 'string' || !first.runId) return ['start() must answer { runId: non-empty string }'];
  const second = await worker.start(subject, { idempotencyKey: key, signal });
  if (second?.runId !== first.runId) problems.push(`start() with the same idempotency key answered a second run (${first.runId}, then ${String(second?.runId)})`);
  const waitMs = opts.waitMs ?? worker.pollIntervalMs ?? 100;
  let outcome: GoalRunOutcome | undefined;
  for (let i = 0; i < (opts.maxCollects ?? 50) && !outcome; i++) {
    outcome = await worker.collect(subject, first.runId, signal);
    if (!outcome) await new Promise((r) => setTimeout(r, waitMs));
  }
  if (!outcome) return [...problems, `collect() never reported run ${first.runId} as finished`];
  if (outcome.runId !== first.runId) problems.push(`collect() answered the outcome of another run (${outcome.runId})`);
  if (typeof outcome.status !== 'string' || !outcome.status) problems.push('collect() outcome needs a status');
  if (outcome.costUsd !== undefined && !(typeof outcome.costUsd === 'number' && Number.isFinite(outcome.costUsd) && outcome.costUsd >= 0)) {
    problems.push('collect() costUsd must be a finite number >= 0');
  }
  if (outcome.verification && !['pass', 'fail', 'revise'].includes(outcome.verification.verdict)) problems.push('collect() verification.verdict must be pass, fail or revise');
  return problems;
}
