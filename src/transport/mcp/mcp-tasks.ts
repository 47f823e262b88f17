import { Injectable } from '@nestjs/common';
import { InterruptsController, RunsController, TransportRunsService } from '../../capabilities/runs';
import { DomainError } from '../../platform/errors/domain-error';
import { wireSegment } from '../../platform/http/bound-ids';
import { SCOPES_KEY } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { UUID } from '../../platform/ids';
import { McpCalls } from './mcp-calls';
import { callToolResultOf, elicitationOf, META_RUN_ID, RunState } from './mcp-run-projection';
import { McpRequest, RPC, RpcError } from './mcp-wire';

/** The MCP Tasks extension (ext-tasks, revision 2026-07-28), served on the v2 mount (RFC 0198). */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** The methods of the extension; everything else of the mount is unchanged by it. */
export const TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);
/** How often a client is asked to poll a task (ext-tasks `pollIntervalMs`). */
export const TASK_POLL_INTERVAL_MS = 1000;
/** The reason a `tasks/cancel` records on the run's `run.cancelled` (a REST cancel records its body's). */
export const TASK_CANCEL_REASON = 'mcp-task-cancelled';

/** Run statuses that are not terminal and wait on nobody at the client: the task is `working` (RFC 0198 §D). */
const WORKING = new Set(['pending', 'running', 'paused', 'cancelling', 'waiting-external']);

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * The scopes the REST twin of an operation declares (what the auth guard checks there), read from
 * its route metadata so a task method is authorized exactly as `getRun`, `cancelRun` and
 * `resolveInterruptByRun` are.
 */
function restScopes(controller: { prototype: object }, handler: string): string[] {
  const fn = (controller.prototype as Record<string, unknown>)[handler];
  const declared = (typeof fn === 'function' ? Reflect.getMetadata(SCOPES_KEY, fn) : undefined) ?? Reflect.getMetadata(SCOPES_KEY, controller);
  return Array.isArray(declared) ? (declared as string[]) : [];
}
const GET_SCOPES = restScopes(RunsController, 'get');
const CANCEL_SCOPES = restScopes(RunsController, 'cancel');
const RESOLVE_SCOPES = restScopes(InterruptsController, 'resolve');

/** Whether the request declared the extension in its per-request client capabilities. */
export function declaresTasks(req: McpRequest): boolean {
  const ext = req.clientCapabilities.extensions;
  return isObject(ext) && isObject(ext[TASKS_EXTENSION]);
}

/** A `taskId`: the run's tenant-bound id `<tenant>/<runId>` in its projected one-segment form (identity.md §5). */
export function taskIdOf(principal: Principal, runId: string): string {
  return wireSegment(`${principal.tenant}/${runId}`);
}

/** The interrupt key of a task's `inputRequests` (the tenant-bound interruptId, as the MRTR answer keys it). */
function interruptKey(principal: Principal, interruptId: string): string {
  return `${principal.tenant}/${interruptId}`;
}

/** The run id a `taskId` names for this caller, or undefined (malformed, another tenant's): never told apart. */
export function runIdOf(principal: Principal, taskId: unknown): string | undefined {
  if (typeof taskId !== 'string' || taskId.length > 400) return undefined;
  let bound: string;
  try {
    bound = decodeURIComponent(taskId.replace(/%/g, '%25').replace(/~([0-9A-Fa-f]{2})/g, '%$1'));
  } catch {
    return undefined;
  }
  const cut = bound.lastIndexOf('/');
  if (cut <= 0 || bound.slice(0, cut) !== principal.tenant) return undefined;
  const runId = bound.slice(cut + 1);
  return UUID.test(runId) ? runId.toLowerCase() : undefined;
}

/** The one refusal of a task the caller cannot read, whatever the reason (unknown, malformed, another tenant's or workspace's). */
function notFound(): RpcError {
  return new RpcError(RPC.INVALID_PARAMS, 'Task not found.');
}

function requireScopes(principal: Principal, scopes: string[], what: string): void {
  const missing = scopes.filter((s) => !principal.scopes.has(s));
  if (missing.length) throw new RpcError(RPC.INVALID_REQUEST, `${what} needs ${missing.join(', ')}, which this credential does not hold.`, { error: 'forbidden', requiredScopes: scopes, missingScopes: missing }, 403);
}

/**
 * The MCP Tasks extension on the v2 mount (RFC 0198): a task IS the run. A `tools/call` that
 * declared the extension is answered `CreateTaskResult` once its run exists (the run row is
 * committed, so `tasks/get` resolves), with `taskId` the run's projected tenant-bound id; `tasks/get`,
 * `tasks/update` and `tasks/cancel` are `getRun`, `resolveInterruptByRun` and `cancelRun` for the
 * caller, with their REST scopes. Nothing is kept here between requests: every answer is read from
 * the run, so a task survives a restart and reads the same on every replica.
 */
@Injectable()
export class McpTasks {
  constructor(
    private readonly runs: TransportRunsService,
    private readonly calls: McpCalls,
  ) {}

  /** Refuses a task method of a request that did not declare the extension (ext-tasks §Error Handling: -32021). */
  requireDeclared(req: McpRequest): void {
    if (!declaresTasks(req)) {
      throw new RpcError(RPC.MISSING_CLIENT_CAPABILITY, `${req.method} needs the ${TASKS_EXTENSION} extension declared in the request's client capabilities.`, { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
    }
  }

  /** The run behind a task, read for this caller (`getRun`): -32602 for anything it cannot read. */
  async read(principal: Principal, taskId: unknown): Promise<RunState & Record<string, unknown>> {
    const runId = runIdOf(principal, taskId);
    if (!runId) throw notFound();
    try {
      return (await this.runs.get(principal, runId)) as unknown as RunState & Record<string, unknown>;
    } catch (e) {
      if (e instanceof DomainError && e.status === 404) throw notFound();
      throw e;
    }
  }

  /** The task a run is (ext-tasks `DetailedTask`), read-only: nothing is written to answer it (RFC 0198 §F.9). */
  taskOf(principal: Principal, state: RunState & { startedAt?: string; completedAt?: string }): Record<string, unknown> {
    const runId = state.runId;
    const onWire = { ...state, runId: `${principal.tenant}/${runId}` };
    const requestedAt = (state.interrupt as { requestedAt?: string } | undefined)?.requestedAt;
    // A run not yet claimed has no start time: it was created at this read, give or take the claim.
    const createdAt = state.startedAt ?? requestedAt ?? state.completedAt ?? new Date().toISOString();
    const base = {
      taskId: taskIdOf(principal, runId),
      createdAt,
      lastUpdatedAt: state.completedAt ?? requestedAt ?? createdAt,
      // The handle lives as long as the run is retained: no TTL of its own (RFC 0198 §F.11).
      ttlMs: null,
      pollIntervalMs: TASK_POLL_INTERVAL_MS,
      _meta: { [META_RUN_ID]: onWire.runId },
    };
    const done = callToolResultOf(onWire);
    // A failed run is a tool outcome: completed with isError (ext-tasks reserves failed for JSON-RPC errors).
    if (done) return state.status === 'cancelled' ? { ...base, status: 'cancelled', statusMessage: 'The run was cancelled.' } : { ...base, status: 'completed', result: done };
    const open = state.interrupt;
    const ask = open ? elicitationOf(open) : undefined;
    if (open && ask && (state.status === 'waiting-approval' || state.status === 'waiting-input')) {
      return {
        ...base,
        status: 'input_required',
        statusMessage: `Waiting on its ${open.kind}.`,
        inputRequests: { [interruptKey(principal, open.interruptId)]: { method: 'elicitation/create', params: { mode: 'form', message: ask.message, requestedSchema: ask.requestedSchema } } },
      };
    }
    const why = WORKING.has(state.status) ? `The run is ${state.status}.` : `The run waits on its ${open?.kind ?? 'interrupt'}, which is answered outside MCP (the approvals inbox).`;
    return { ...base, status: 'working', statusMessage: why };
  }

  /** `CreateTaskResult` for a run a `tools/call` started: its state, read back after the insert (so `tasks/get` already resolves). */
  created(principal: Principal, state: RunState): Record<string, unknown> {
    return { ...this.taskOf(principal, state), resultType: 'task' };
  }

  /** A caller reading tasks needs what `getRun` needs. */
  requireReadScopes(principal: Principal, what: string): void {
    requireScopes(principal, GET_SCOPES, what);
  }

  async get(principal: Principal, req: McpRequest): Promise<Record<string, unknown>> {
    this.requireDeclared(req);
    requireScopes(principal, GET_SCOPES, 'tasks/get');
    return this.taskOf(principal, await this.read(principal, req.params.taskId));
  }

  /**
   * `tasks/update`: each `inputResponses` entry keyed by the open interrupt's key resolves it as an
   * MRTR retry's answer does (approver checked, quorum rules); a key that is not outstanding (never
   * issued, already answered, superseded) resolves nothing. Always an empty acknowledgement: an
   * interrupt is resolved at most once however often it is answered (RFC 0198 §E.7).
   */
  async update(principal: Principal, req: McpRequest): Promise<Record<string, unknown>> {
    this.requireDeclared(req);
    requireScopes(principal, GET_SCOPES, 'tasks/update');
    const state = await this.read(principal, req.params.taskId);
    const responses = req.params.inputResponses;
    if (!isObject(responses)) throw new RpcError(RPC.INVALID_PARAMS, 'params.inputResponses must be an object keyed by the inputRequests keys of the task.');
    const open = state.interrupt;
    const answer = open ? responses[interruptKey(principal, open.interruptId)] : undefined;
    const ask = open && (state.status === 'waiting-approval' || state.status === 'waiting-input') ? elicitationOf(open) : undefined;
    if (!open || !ask || answer === undefined) return {};
    if (!isObject(answer) || !['accept', 'decline', 'cancel'].includes(answer.action as string)) {
      throw new RpcError(RPC.INVALID_PARAMS, `inputResponses["${interruptKey(principal, open.interruptId)}"] must be an ElicitResult {action: accept|decline|cancel, content?}.`);
    }
    // MCP content never advances a gate by itself: the caller must be an approver, as on the REST route.
    requireScopes(principal, RESOLVE_SCOPES, 'Answering an interrupt');
    try {
      await this.calls.resolveOpen(principal, state, open, ask.form, answer);
    } catch (e) {
      if (e instanceof RpcError) throw e;
      if (!(e instanceof DomainError)) throw e;
      // Someone else answered (or the run moved on) first: this answer resolves nothing, acknowledged.
      if (e.status === 409 || e.status === 404) return {};
      // Not an eligible approver, or an answer the gate refuses: nothing resolved, said as invalid params.
      throw new RpcError(RPC.INVALID_PARAMS, e.message, { error: e.code, ...(e.details ?? {}) });
    }
    return {};
  }

  /** `tasks/cancel`: `cancelRun` for the caller; a terminal task is acknowledged and nothing is appended (RFC 0198 §F.10). */
  async cancel(principal: Principal, req: McpRequest): Promise<Record<string, unknown>> {
    this.requireDeclared(req);
    // Reading first: a task the caller cannot read is not found, whatever else it may not do (RFC 0198 §C.6).
    requireScopes(principal, GET_SCOPES, 'tasks/cancel');
    const state = await this.read(principal, req.params.taskId);
    requireScopes(principal, CANCEL_SCOPES, 'tasks/cancel');
    if (state.status === 'completed' || state.status === 'failed' || state.status === 'cancelled') return {};
    try {
      await this.runs.cancel(principal, state.runId, TASK_CANCEL_REASON);
    } catch (e) {
      // It ended (or stopped being cancellable) between the read and the cancel: acknowledged, as cancelRun answers a finished run.
      if (e instanceof DomainError && (e.status === 409 || e.status === 404)) return {};
      throw e;
    }
    return {};
  }
}
