import { defineExtensionPoint } from './extension-point';
import type { ToolReplayPolicy } from './tool-source';

/**
 * A **node executor** runs the nodes of one `typeId` inside a workflow run. The host's run engine
 * walks a chain's DAG and hands each node to the executor registered for its `typeId`: built in are
 * `core.noop`, `core.delay`, `core.tool` and `core.approval`; a plugin ships more exactly as it ships
 * a tool source.
 *
 * Contract:
 * - `execute` receives the node's templated `config`, the outputs of its upstream nodes, the run's
 *   inputs, the run principal (tenant, workspace, principal id and scopes: never a credential) and an
 *   `AbortSignal` that fires on cancellation, run timeout or loss of the run's lease. Stop work and
 *   reject when it fires.
 * - It resolves with the node's outputs (JSON) and, optionally, a USD cost the host sums against the
 *   run's `maxCostUsd` bound; or it rejects (the node fails; an error with a string `code` gives the
 *   `node.failed` error code; one with a numeric `costUsd` still adds that cost).
 * - `replayPolicy` says whether the host may execute a node again after a replica died while the node
 *   was in flight: `deterministic` and `idempotent` nodes are re-executed; a `non-deterministic` one
 *   is failed with `node_interrupted` rather than silently repeated. Deterministic nodes are also the
 *   ones whose completions the host may batch.
 */
export interface NodeExecutionContext {
  runId: string;
  nodeId: string;
  typeId: string;
  /** The node's `config`, with `{{inputs.*}}` / `{{nodes.<id>.*}}` placeholders substituted. */
  config: Record<string, unknown>;
  /** The run's inputs (`POST /v1/runs {inputs}`). */
  runInputs: Record<string, unknown>;
  /** Outputs of the direct upstream nodes, by node id, plus port-bound values from `from.port -> to.port` edges. */
  inputs: Record<string, unknown>;
  /** 0-based attempt (greater than 0 when the node is re-executed after a takeover). */
  attempt: number;
  principal: { tenant: string; workspace?: string; principal: string; scopes: ReadonlySet<string> };
  signal: AbortSignal;
  /**
   * Appends a protocol or vendor-prefixed event to the run's log (e.g. `agent.toolCalled`). The host
   * stamps the node id; payloads must be content-free where the protocol says so. A
   * `provider.usage` event (RFC 0026) with a `costEstimateUsd` (and no non-USD `currency`) is the
   * protocol's durable cost record: the host adds it to the run's cost at once, so a run crosses
   * its `maxCostUsd` bound while the node is still in flight. Report a cost either this way or
   * as `NodeExecutionResult.costUsd`, never both.
   */
  emit(type: string, payload: Record<string, unknown>, opts?: { correlationId?: string; causationId?: string }): Promise<{ eventId: string }>;
  /**
   * Suspends the run until an approval gate opened by the host is decided (RFC 0051 gates): resolves
   * `granted` or `denied`. While suspended the run is `waiting-approval` and holds no replica.
   */
  awaitApproval(request: { title: string; artifactType?: string }): Promise<'granted' | 'denied'>;
}

export interface NodeExecutionResult {
  outputs: Record<string, unknown>;
  /** Cost of this execution in USD (RFC 0084), summed into the run's cost bound. */
  costUsd?: number;
}

export interface NodeExecutorProvider {
  execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult>;
  /** Validates a node's (untemplated) config when a run is created; returns problems (empty: valid). */
  validateConfig?(config: Record<string, unknown>): string[];
  /**
   * The replay policy of one node when it depends on the config (e.g. the descriptor of the tool a
   * `core.tool` node calls); default: the `replayPolicy` of the decorator.
   */
  replayPolicyOf?(config: Record<string, unknown>, principal: NodeExecutionContext['principal']): Promise<ToolReplayPolicy>;
}

export interface NodeExecutorMeta {
  /** The node `typeId` this executor runs, e.g. `vendor.acme.summarize`. */
  typeId: string;
  /** Default `non-deterministic`: never re-executed after a crash while in flight. */
  replayPolicy?: ToolReplayPolicy;
}

/** Thrown (or any error with a string `code`) to fail a node with that code. */
export class NodeExecutionError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'NodeExecutionError';
  }
}

/** Marks a provider as a node executor: `@NodeExecutor({ typeId: 'vendor.acme.summarize' })`. */
export const NodeExecutor = defineExtensionPoint<NodeExecutorMeta>('node-executor');
