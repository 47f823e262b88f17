import { defineExtensionPoint, extensionMetadata } from './extension-point';
import type { McpJsonRpcError, NodeMcp } from './mcp';
import type { NodeArtifacts } from './run-artifacts';
import type { NodeHttp } from './safe-fetch';
import type { ToolReplayPolicy } from './tool-source';
import type { NodeWorkspace } from './workspace';

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
 *   ones whose completions the host may batch, and a run made only of them may start before its run
 *   is written (its insert then carries the run's first progress): declare `deterministic` only for
 *   work without effects of its own. What a node does through the context (`emit`, `effect`,
 *   `artifacts`, gates) always happens after its run is written.
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
  /**
   * Performs an external side effect at most once (idempotency.md Layer 2). Each call is the node's
   * next logical effect; its identity (`logicalInvocationId`, passed to `perform`, suitable as a
   * provider `Idempotency-Key`) is the same on every retry and re-execution of the node, so when a
   * retry or a concurrent executor reaches the same effect, the persisted result is returned and
   * `perform` is not called again. Results must be JSON.
   */
  effect?<T>(providerKey: string, perform: (logicalInvocationId: string) => Promise<T>): Promise<T>;
  /**
   * Suspends the run on an interrupt (the OpenWOP `interrupt(payload)` primitive) until it is
   * resolved, and answers the resume value, already validated against `resumeSchema`. The run is
   * `waiting-approval` (kind `approval`), `waiting-input` (`clarification`) or `waiting-external`
   * (`external-event`) meanwhile and holds no replica. An interrupt rejected, denied, cancelled or
   * expired throws a `NodeExecutionError` (`interrupt_rejected`, `interrupt_expired`).
   */
  interrupt(request: InterruptRequest): Promise<unknown>;
  /**
   * Since 1.5: stores a file the node produced as a run artifact (`put({name, contentType, data,
   * metadata?})` answers `{artifactId, name, contentType, sizeBytes, nodeId, createdAt}`) and
   * appends `artifact.created`. Optional in the type so that contexts built by older kits still
   * compile; the host's run engine always provides it.
   */
  artifacts?: NodeArtifacts;
  /**
   * Since 1.8: the operator's MCP servers by `serverId` (`callTool`, `listTools`, `readResource`,
   * `serverHealth`), each resolving to the server's MCP result unaltered (see `NodeMcp`). Optional in
   * the type so that contexts built by older kits still compile; the host's run engine provides it.
   */
  mcp?: NodeMcp;
  /**
   * Since 1.9: the host's SSRF-guarded HTTP client (`safeFetch`, RFC 0076 §B; see `NodeHttp`). Optional in the
   * type so that contexts built by older kits still compile; the host's run engine provides it.
   */
  http?: NodeHttp;
  /**
   * Since 1.9: the run's agent workspace as of the run's start (RFC 0059 §D; see `NodeWorkspace`):
   * `get(path)` and `list(prefix?)`, immutable for the run's duration. Present when the host serves the
   * workspace (`capabilities.workspace.supported`).
   */
  workspace?: NodeWorkspace;
}

/** What a node asks for when it suspends on an interrupt. */
export interface InterruptRequest {
  kind: 'approval' | 'clarification' | 'external-event';
  /** What the people (or the operator) are asked, in a line. */
  title: string;
  /** The JSON Schema the resume value must satisfy (400 on the resolving request otherwise). */
  resumeSchema?: Record<string, unknown>;
  /** The kind's data: `questions` for a clarification; `eventType` and `correlation` for an external event. */
  data?: Record<string, unknown>;
  /** An approval's quorum: how many accepts release it (default: the host's approval quorum). */
  requiredApprovals?: number;
  /** How rejects close a multi-approver approval (default `single-veto`). */
  rejectionPolicy?: 'single-veto' | 'majority';
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
  /**
   * Optional: the authority a node needs, known before it runs: the scopes it will act with (e.g. the
   * `auth.scopes` of the tool a `core.tool` node calls) and the chains it starts as child runs. Work
   * that acts later on someone's behalf (goals, automations, child runs) is refused when it is set up
   * by a principal lacking one of them. Default: nothing beyond `runs:create`.
   */
  requiredScopesOf?(config: Record<string, unknown>, scope: { tenant: string; workspace?: string }): Promise<{ scopes?: string[]; childWorkflows?: string[] }>;
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
    /** Since 1.8: machine-readable facts of the failure (e.g. `{ service: 'mcp' }`). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'NodeExecutionError';
  }
}

/**
 * Since 1.8: an MCP server answered a `ctx.mcp` request with a JSON-RPC error. `error` is that
 * `Error { code, message, data? }` exactly as the server sent it; the node-failure code is `mcp_error`.
 */
export class NodeMcpError extends NodeExecutionError {
  constructor(readonly error: McpJsonRpcError) {
    super('mcp_error', `The MCP server answered error ${error.code}: ${error.message}`, { service: 'mcp', error });
    this.name = 'NodeMcpError';
  }
}

/** Marks a provider as a node executor: `@NodeExecutor({ typeId: 'vendor.acme.summarize' })`. */
export const NodeExecutor = defineExtensionPoint<NodeExecutorMeta>('node-executor');

/** The node `typeId` form the host accepts. */
export const NODE_TYPE_ID_PATTERN = /^[a-z][a-zA-Z0-9._-]*$/;

export interface NodeExecutorContractOptions {
  /** A valid node config to execute with (default `{}`). */
  config?: Record<string, unknown>;
  /** Upstream outputs handed to the node (default `{}`). */
  inputs?: Record<string, unknown>;
  /** The run's inputs (default `{}`). */
  runInputs?: Record<string, unknown>;
  /** Configs `validateConfig` must refuse (each needs at least one problem). */
  invalidConfigs?: Array<Record<string, unknown>>;
  /** A config under which `execute` keeps working until its signal fires: the kit checks it stops on abort. */
  abortConfig?: Record<string, unknown>;
  /** How soon after the abort `execute` must reject (default 1000 ms). */
  abortWithinMs?: number;
  /** What `awaitApproval` answers (default `granted`). */
  approval?: 'granted' | 'denied';
  /** What `interrupt` answers (default `{}`). */
  resumeValue?: unknown;
  /** `execute` must reject with this error code instead of resolving. */
  expectErrorCode?: string;
  /** The run principal (default a contract tenant with no scopes). */
  principal?: NodeExecutionContext['principal'];
  /** Since 1.8: what the kit hands the executor as `ctx.mcp` (default: none, as on a host without MCP servers). */
  mcp?: NodeMcp;
  /** Since 1.9: what the kit hands the executor as `ctx.workspace` (default: none, as on a host without the workspace). */
  workspace?: NodeWorkspace;
}

export interface NodeExecutorContractReport {
  /** Contract violations (empty when the executor conforms). */
  problems: string[];
  /** The result of the plain execution, when it resolved. */
  result?: NodeExecutionResult;
  /** The events the executor emitted during the plain execution. */
  events: Array<{ type: string; payload: Record<string, unknown> }>;
}

const EVENT_TYPE = /^[a-z][a-zA-Z0-9]*(\.[a-zA-Z0-9]+)+$/;

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v as Record<string, unknown>)) deepFreeze(x);
  }
  return v;
}

function isPlainJsonObject(v: unknown): v is Record<string, unknown> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
  try {
    return JSON.stringify(JSON.parse(JSON.stringify(v))) === JSON.stringify(v);
  } catch {
    return false;
  }
}

function codeOf(e: unknown): string | undefined {
  const c = (e as { code?: unknown } | undefined)?.code;
  return typeof c === 'string' && c ? c : undefined;
}

/**
 * Contract test kit for node executors: executes the provider the way the host's run engine does
 * and returns what violates the contract. It checks that the class carries a valid `@NodeExecutor`
 * declaration; that `validateConfig` (when present) answers string problems, accepts `config` and
 * refuses each of `invalidConfigs`; that `execute` resolves `{outputs}` with a JSON object (or
 * rejects with `expectErrorCode`), a finite `costUsd >= 0` when present and not a second report of
 * a cost already emitted as `provider.usage`; that it does not mutate its config or inputs (they
 * are frozen); that every emitted event type is dotted protocol or vendor form with an object
 * payload; that a `deterministic` executor answers the same outputs twice; and, with `abortConfig`,
 * that it rejects promptly when its signal fires, and at once when the signal was already aborted.
 */
export async function checkNodeExecutorContract(executor: NodeExecutorProvider, opts: NodeExecutorContractOptions = {}): Promise<NodeExecutorContractReport> {
  const problems: string[] = [];
  const events: NodeExecutorContractReport['events'] = [];
  const meta = extensionMetadata(NodeExecutor, executor);
  if (!meta) problems.push('the class is not decorated with @NodeExecutor({ typeId })');
  else {
    if (typeof meta.typeId !== 'string' || !NODE_TYPE_ID_PATTERN.test(meta.typeId)) problems.push(`@NodeExecutor typeId ${JSON.stringify(meta.typeId)} must match ${NODE_TYPE_ID_PATTERN}`);
    if (meta.replayPolicy !== undefined && !['deterministic', 'idempotent', 'non-deterministic'].includes(meta.replayPolicy)) problems.push(`@NodeExecutor replayPolicy ${JSON.stringify(meta.replayPolicy)} is not a replay policy`);
  }
  if (typeof executor.execute !== 'function') return { problems: [...problems, 'execute() is missing'], events };
  const typeId = meta?.typeId ?? 'contract.unknown';
  const config = opts.config ?? {};

  if (executor.validateConfig) {
    const own = executor.validateConfig(structuredClone(config));
    if (!Array.isArray(own) || own.some((p) => typeof p !== 'string')) problems.push('validateConfig() must answer an array of strings');
    else if (own.length) problems.push(`validateConfig() refused the valid config: ${own.join('; ')}`);
    for (const bad of opts.invalidConfigs ?? []) {
      const found = executor.validateConfig(structuredClone(bad));
      if (!Array.isArray(found) || !found.length) problems.push(`validateConfig() accepted an invalid config ${JSON.stringify(bad)}`);
    }
  } else if (opts.invalidConfigs?.length) {
    problems.push('invalidConfigs were given but the executor has no validateConfig()');
  }

  let n = 0;
  const context = (signal: AbortSignal, c: Record<string, unknown>, sink: typeof events): NodeExecutionContext => ({
    runId: '00000000-0000-4000-8000-000000000000',
    nodeId: `contract-node-${++n}`,
    typeId,
    config: deepFreeze(structuredClone(c)),
    runInputs: deepFreeze(structuredClone(opts.runInputs ?? {})),
    inputs: deepFreeze(structuredClone(opts.inputs ?? {})),
    attempt: 0,
    principal: opts.principal ?? { tenant: 'contract-tenant', principal: 'contract-principal', scopes: new Set<string>() },
    signal,
    emit: async (type, payload) => {
      if (typeof type !== 'string' || !EVENT_TYPE.test(type)) problems.push(`emit() with an event type that is not dotted protocol or vendor form: ${JSON.stringify(type)}`);
      if (!payload || typeof payload !== 'object' || Array.isArray(payload)) problems.push(`emit(${type}) payload must be an object`);
      sink.push({ type, payload });
      return { eventId: `contract-event-${sink.length}` };
    },
    awaitApproval: async () => opts.approval ?? 'granted',
    interrupt: async (req) => {
      if (req.kind === 'approval' && opts.approval === 'denied') throw new NodeExecutionError('interrupt_rejected', 'The approval was rejected.');
      return opts.resumeValue ?? (req.kind === 'approval' ? { action: 'accept' } : {});
    },
    artifacts: {
      put: async (a) => {
        if (!a || typeof a.name !== 'string' || !a.name) problems.push('artifacts.put() needs a name');
        const data = a?.data;
        const sizeBytes = typeof data === 'string' ? Buffer.byteLength(data) : data instanceof Uint8Array ? data.byteLength : Buffer.byteLength(JSON.stringify(data ?? null));
        const artifactId = `contract-artifact-${sink.length + 1}`;
        sink.push({ type: 'artifact.created', payload: { artifactId, artifactType: a?.artifactType ?? 'file', nodeId: `contract-node-${n}`, registered: false } });
        return { artifactId, name: a?.name, contentType: a?.contentType ?? 'application/octet-stream', sizeBytes, nodeId: `contract-node-${n}`, createdAt: new Date().toISOString() };
      },
    },
    ...(opts.mcp ? { mcp: opts.mcp } : {}),
    ...(opts.workspace ? { workspace: opts.workspace } : {}),
  });

  const runOnce = async (sink: typeof events): Promise<{ result?: NodeExecutionResult; error?: unknown }> => {
    try {
      return { result: await executor.execute(context(new AbortController().signal, config, sink)) };
    } catch (error) {
      return { error };
    }
  };

  const first = await runOnce(events);
  let result: NodeExecutionResult | undefined;
  if (opts.expectErrorCode !== undefined) {
    if (!first.error) problems.push(`execute() resolved, expected a rejection with code ${opts.expectErrorCode}`);
    else if (codeOf(first.error) !== opts.expectErrorCode) problems.push(`execute() rejected with code ${String(codeOf(first.error))}, expected ${opts.expectErrorCode}`);
  } else if (first.error) {
    const e = first.error as Error;
    problems.push(e instanceof TypeError && /read.only|frozen|not extensible|Cannot (assign|add|delete)/i.test(e.message) ? `execute() mutated its frozen config or inputs: ${e.message}` : `execute() rejected: ${String(codeOf(e) ?? '')} ${e?.message ?? String(e)}`.trim());
  } else {
    result = first.result;
    if (!result || !isPlainJsonObject(result.outputs)) problems.push('execute() must resolve { outputs } with a JSON object');
    if (result && result.costUsd !== undefined) {
      if (!(typeof result.costUsd === 'number' && Number.isFinite(result.costUsd) && result.costUsd >= 0)) problems.push('costUsd must be a finite number >= 0');
      if (events.some((e) => e.type === 'provider.usage' && typeof e.payload.costEstimateUsd === 'number') && result.costUsd > 0) {
        problems.push('the cost is reported twice: as provider.usage costEstimateUsd and as costUsd');
      }
    }
    if (meta?.replayPolicy === 'deterministic' && result) {
      const again = await runOnce([]);
      if (again.error || JSON.stringify(again.result?.outputs) !== JSON.stringify(result.outputs)) problems.push('a deterministic executor answered different outputs for the same execution');
    }
  }

  if (opts.abortConfig) {
    const within = opts.abortWithinMs ?? 1000;
    const ac = new AbortController();
    const running = executor.execute(context(ac.signal, opts.abortConfig, []));
    const settled = running.then(
      () => 'resolved' as const,
      () => 'rejected' as const,
    );
    await new Promise((r) => setTimeout(r, 10));
    ac.abort();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([settled, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), within)))]);
    clearTimeout(timer);
    if (outcome === 'timeout') problems.push(`execute() did not stop within ${within} ms of its signal firing`);
    else if (outcome === 'resolved') problems.push('execute() resolved after its signal fired; it must reject');
    const pre = new AbortController();
    pre.abort();
    const early = executor.execute(context(pre.signal, opts.abortConfig, [])).then(
      () => 'resolved' as const,
      () => 'rejected' as const,
    );
    const preOutcome = await Promise.race([early, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), within)))]);
    clearTimeout(timer);
    if (preOutcome !== 'rejected') problems.push('execute() with an already aborted signal must reject at once');
  }
  return { problems, result, events };
}
