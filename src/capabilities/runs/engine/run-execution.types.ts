import type { NodeExecutionContext, ToolReplayPolicy } from '@openwop-host/plugin-sdk';
import type { EventLogService } from '../../../platform/events/event-log.service';
import type { HeldLease } from '../../../platform/leases/lease-keeper';
import type { ActivityLedger } from '../../../platform/idempotency/activity-ledger.service';
import type { RunArtifactsService } from '../artifacts/run-artifacts.service';
import type { ApprovalsService } from '../../approvals';
import type { NodeExecutorRegistry } from './node-executor-registry.service';
import type { NodeMcpBinder } from './node-mcp';
import type { SuspendRequest } from './run-gates';
import type { PauseRequest, RunStore } from './run-store';
import type { EngineWriteError } from './run-writer';
import type { RunMetrics } from '../runs.metrics';
import type { RunsSettings } from '../runs.settings';
import type { DagNode } from '../workflow-definition';

/** The resolved RFC 0058 bounds of a run (stored in `configurable`). */
export interface RunBounds {
  runTimeoutMs: number;
  maxLoopIterations: number;
  maxCostUsd: number;
}

export type StopReason = 'cancel' | 'timeout' | 'lease' | 'shutdown' | 'pause';

/** The engine's handle on one execution. */
export interface Execution {
  runId: string;
  /** The fence of the claim this execution writes under. */
  fence: number;
  abort: AbortController;
  reason?: StopReason;
  done: Promise<void>;
  /** The claim's lease, kept by the engine's lease keeper (renewed with every other run of the replica). */
  lease?: HeldLease<RunLeaseInfo>;
  /** Set by the execution: asks it to pause (an operator's `:pause` seen on this replica). */
  pause?: (request: PauseRequest) => void;
  /** Set by the execution: what a renewal of its lease read (an operator's cancel or pause). */
  renewed?: (info: RunLeaseInfo) => void;
  /** A run started before its insert (see EagerStart): `written` once its first write inserted it. */
  eager?: { readonly written: boolean };
  /** Set by the execution: writes what it has pending now (a run started before its insert: the insert). */
  writeNow?: () => void;
}

/** What a renewal of a run's lease reads besides the lease: what an operator asked for meanwhile. */
export interface RunLeaseInfo {
  cancelRequested: boolean;
  pause: PauseRequest | null;
}

/** What an execution uses of the engine that started it. */
export interface ExecutionDeps {
  store: RunStore;
  events: Pick<EventLogService, 'append' | 'wake' | 'publish' | 'closeLocalStream'>;
  executors: Pick<NodeExecutorRegistry, 'get'>;
  approvals: Pick<ApprovalsService, 'open' | 'stateOf'>;
  settings: Pick<RunsSettings, 'leaseMs' | 'nodeConcurrency' | 'limits'>;
  owner: string;
  log: { warn(o: Record<string, unknown>): void; error(o: Record<string, unknown>): void };
  metrics: Pick<RunMetrics, 'nodeFinished' | 'runFinished'>;
  ledger: ActivityLedger;
  /** Where `ctx.artifacts.put` stores what a node produces (and announces it with `artifact.created`). */
  artifacts: Pick<RunArtifactsService, 'forNode'>;
  /** Gives a node's context its `ctx.mcp`, bound to the run's principal (absent: no `ctx.mcp`). */
  nodeMcp?: Pick<NodeMcpBinder, 'bind'>;
  /** Hands the lease back once the database answers again (the execution stopped because it was away). */
  releaseWhenPossible(runId: string, fence: number): void;
  /** The execution of the run ended (whatever its outcome). */
  finished(runId: string): void;
}

export interface NodeOutcome {
  node: DagNode;
  safe: boolean;
  attempt: number;
  ok?: { outputs: Record<string, unknown>; costUsd: number; durationMs: number };
  failed?: { code: string; message: string };
  suspend?: SuspendRequest;
  /** The engine's own write failed while the node ran: not the node's failure. */
  engineFault?: EngineWriteError;
}

/** The RFC 0058 bounds of a run: its `configurable` values, else the advertised limits. */
export function runBounds(c: Record<string, unknown> | null, limits: RunsSettings['limits']): RunBounds {
  const v = c ?? {};
  return {
    runTimeoutMs: typeof v.runTimeoutMs === 'number' ? v.runTimeoutMs : limits.maxRunDurationMs,
    maxLoopIterations: typeof v.maxLoopIterations === 'number' ? v.maxLoopIterations : limits.maxLoopIterations,
    maxCostUsd: typeof v.maxCostUsd === 'number' ? v.maxCostUsd : limits.maxBudgetCostUsd,
  };
}

/** A crossed bound (`cap.breached`) and the error that fails the run. */
export interface Breach {
  kind: 'run-duration' | 'loop-iterations' | 'budget-cost';
  limit: number;
  observed: number;
  code: string;
  message: string;
  nodeId?: string;
}

export const loopBreach = (limit: number, observed: number, nodeId: string): Breach => ({ kind: 'loop-iterations', limit, observed, code: 'loop_limit', message: `The run would execute more than ${limit} nodes.`, nodeId });
export const costBreach = (limit: number, observed: number, nodeId: string): Breach => ({ kind: 'budget-cost', limit, observed, code: 'cost_limit', message: `The run cost ${observed} USD, over its ${limit} USD bound.`, nodeId });
export const durationBreach = (limit: number, observed: number): Breach => ({ kind: 'run-duration', limit, observed, code: 'run_timeout', message: `The run exceeded its ${limit} ms duration bound.` });

/**
 * RFC 0058 run-duration: `onBreach` once the time elapsed since `startedAtMs` is strictly greater
 * than `limitMs` (checked when it can first be, not polled). Answers how to stop watching.
 */
export function watchRunDuration(limitMs: number, startedAtMs: number, onBreach: (b: Breach) => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  const check = () => {
    const elapsed = Date.now() - startedAtMs;
    if (elapsed <= limitMs) {
      timer = setTimeout(check, limitMs - elapsed + 1);
      return;
    }
    onBreach(durationBreach(limitMs, elapsed));
  };
  check();
  return () => clearTimeout(timer);
}

/** A node's replay policy: its executor's for its config (core.tool: the tool's), `non-deterministic` when nothing serves it. */
export async function nodeReplayPolicy(executors: Pick<NodeExecutorRegistry, 'get'>, n: DagNode, principal: NodeExecutionContext['principal']): Promise<ToolReplayPolicy> {
  const ex = executors.get(n.typeId);
  if (!ex) return 'non-deterministic';
  if (ex.provider.replayPolicyOf) return ex.provider.replayPolicyOf(n.config, principal);
  return ex.replayPolicy;
}

/**
 * The message of a run whose lease expired: after renewals that failed (the database away), or
 * because this process stalled so long that no renewal could be sent (a blocked event loop is not
 * a database outage, and an operator looks for its cause elsewhere).
 */
export function leaseExpiredMessage(stalledMs: number | undefined): string {
  if (stalledMs !== undefined) return 'run lease expired because this process stalled (its event loop was blocked) and could not renew it; the run resumes from what was written';
  return 'run lease could not be renewed while the database was away; the run resumes when it answers';
}
