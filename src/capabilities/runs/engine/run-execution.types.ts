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
import type { CompensationHook } from '../compensation/compensation.service';
import type { WorkspaceSnapshots } from '../../workspace';

/*
 * The shapes the engine and one claim's execution share (types only: a run's bounds are run-bounds.ts,
 * a node's replay policy the executor registry's, the lease-lost message the writer's).
 */

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
  eager?: { readonly written: boolean; readonly inserted: Promise<{ inserted: boolean }> };
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
  events: Pick<EventLogService, 'append' | 'wake' | 'publish' | 'closeLocalStream' | 'read'>;
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
  /** Records a run's workspace snapshot point when it starts and gives a node's context its `ctx.workspace` (RFC 0059 §D; absent: none). */
  workspace?: Pick<WorkspaceSnapshots, 'pin' | 'bind'>;
  /** Hands the lease back once the database answers again (the execution stopped because it was away). */
  releaseWhenPossible(runId: string, fence: number): void;
  /** The execution of the run ended (whatever its outcome). */
  finished(runId: string): void;
  /** RFC 0151: mints a failed or cancelled run's compensation plan (set by the compensation service). */
  compensation?: CompensationHook;
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
