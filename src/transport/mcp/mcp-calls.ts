import { Inject, Injectable } from '@nestjs/common';
import { CALL_TOOL_CHAIN, CredentialInterrupts, InterruptsService, TransportRunsService } from '../../capabilities/runs';
import { ApprovalsService } from '../../capabilities/approvals';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { DomainError } from '../../platform/errors/domain-error';
import type { Principal } from '../../platform/identity/principal';
import { AuthorSchemas, SchemaNotCompiled } from '../../platform/schemas/author-schemas';
import { ExposedTool, McpExposure } from './mcp-exposure';
import { McpRequestStateCodec, RequestStateRefused } from './mcp-request-state';
import { randomBytes } from 'node:crypto';
import { HostSecretStore } from '../../platform/secrets/host-secret.store';
import { callToolResultOf, elicitationOf, errorResult, InterruptForm, META_RUN_ID, pendingText, resultOutputs, RunState } from './mcp-run-projection';
import { McpRequest, RPC, RpcError } from './mcp-wire';
import { credentialElicitation, credentialNeed, declaresUrlMode, urlElicitation } from './mcp-url-mode';

const ORIGIN = { transport: 'mcp', trustBoundary: 'untrusted' } as const;
const RESPOND_SCOPE = 'approvals:respond';
/** The host secret the MRTR requestState is signed with. */
const STATE_SECRET = 'mcp-request-state';
/** The JSON-RPC code MCP gives an unknown resource. */
const RESOURCE_NOT_FOUND = -32002;

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Hears a call's progress: how many of the run's steps have completed, and which one last. */
export type ProgressListener = (p: { progress: number; message: string }) => void;

/** The reason a run records when the request that owned it was abandoned by its client (RFC 0198 §G.12). */
export const REQUEST_CANCELLED_REASON = 'mcp-request-cancelled';

/** What a call's transport tells it beyond the request (the v2 mount's tasks and disconnects). */
export interface CallIo {
  /** Aborted when the client goes away before the answer is sent: the run the request owns is then cancelled. */
  signal?: AbortSignal;
  /** Told once the run exists (the transport may open the response stream then). */
  started?: (runId: string) => void;
  /**
   * Given, the call is answered with the task of its run (`CreateTaskResult`) instead of the run's
   * outcome, once the run first stops or `taskHoldMs` has passed (see `held`).
   */
  task?: (state: RunState) => Record<string, unknown>;
  /**
   * Given (a legacy 2025-06-18 caller whose session declared elicitation, on a stream), an open
   * interrupt is asked out of band: this sends the `elicitation/create` request on the call's stream.
   */
  outOfBand?: (request: Record<string, unknown>) => void;
}

/** The binding of an out-of-band elicitation's id: the caller only (the client's response carries nothing else). */
const OUT_OF_BAND = { tool: 'elicitation/create', arguments: {} } as const;
/** How many interrupts one legacy call asks out of band, one after the other, before it answers what it has. */
const OUT_OF_BAND_ROUNDS = 4;
/** How often a call waiting on an out-of-band answer reads its run. */
const OUT_OF_BAND_POLL_MS = 250;

function progressOf(listener: ProgressListener | undefined): ((snap: { runId: string; currentNodeId?: string }, completed: number) => void) | undefined {
  if (!listener) return undefined;
  return (snap, completed) => listener({ progress: completed, message: `run ${snap.runId}: ${completed} step${completed === 1 ? '' : 's'} completed${snap.currentNodeId ? `, at ${snap.currentNodeId}` : ''}` });
}

/** The id a mount answers with: the v2 mount binds host-minted ids to the tenant (`<tenant>/<id>`, v2 ids.schema.json). */
function wireId(req: McpRequest, principal: Principal, id: string): string {
  return req.mount === 'v2' ? `${principal.tenant}/${id}` : id;
}

/** A domain refusal of the run engine, as the JSON-RPC error of the MCP request that caused it. */
function rpcOf(e: unknown): never {
  if (e instanceof DomainError) {
    if (e.status === 403) throw new RpcError(RPC.INVALID_REQUEST, e.message, { error: e.code, ...(e.details ?? {}) }, 403);
    if (e.status >= 400 && e.status < 500) throw new RpcError(RPC.INVALID_PARAMS, e.message, { error: e.code, ...(e.details ?? {}) });
  }
  throw e;
}

/**
 * What the mount runs: `tools/call` (an exposed chain, or one catalog tool through `openwop.call-tool`),
 * `resources/read`, `prompts/get` and the legacy elicitation bridge, each a durable run started for the
 * caller (transport `mcp`, untrusted inputs) and waited on until it settles. A run stopped at an
 * approval or clarification answers `input_required` (MRTR) to a caller that declared `elicitation`;
 * the retry resolves the interrupt only for a caller holding `approvals:respond` (the gate's quorum
 * rules apply), with the signed, bound `requestState` of that interrupt.
 */
@Injectable()
export class McpCalls {
  private readonly schemas = AuthorSchemas.shared();
  private codec?: Promise<McpRequestStateCodec>;

  constructor(
    private readonly exposure: McpExposure,
    private readonly runs: TransportRunsService,
    private readonly interrupts: InterruptsService,
    private readonly approvals: ApprovalsService,
    private readonly secrets: HostSecretStore,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    private readonly credentials: CredentialInterrupts,
  ) {}

  private states(): Promise<McpRequestStateCodec> {
    // One key for every replica (the first to need it writes it), read at first use.
    this.codec ??= this.secrets.getOrCreate(STATE_SECRET, () => randomBytes(32)).then(({ value }) => new McpRequestStateCodec(value, this.config.mcpMount.requestStateTtlSeconds));
    this.codec.catch(() => (this.codec = undefined));
    return this.codec;
  }

  private args(req: McpRequest, key = 'arguments'): Record<string, unknown> {
    const a = req.params[key];
    if (a === undefined) return {};
    if (!isObject(a)) throw new RpcError(RPC.INVALID_PARAMS, `params.${key} must be an object.`);
    return a;
  }

  async callTool(principal: Principal, req: McpRequest, progress?: ProgressListener, io: CallIo = {}): Promise<Record<string, unknown>> {
    const name = req.params.name;
    if (typeof name !== 'string' || !name) throw new RpcError(RPC.INVALID_PARAMS, 'params.name must name a tool.');
    const args = this.args(req);
    const tool = await this.exposure.tool(principal, name);
    if (!tool) throw new RpcError(RPC.INVALID_PARAMS, `Unknown tool: ${name}`, { name });
    // Untrusted arguments are checked before anything runs (mcp-server-untrusted-args).
    let violations: Array<{ path: string; message: string }>;
    try {
      violations = this.schemas.compile(tool.inputSchema)(args);
    } catch (e) {
      if (!(e instanceof SchemaNotCompiled)) throw e;
      throw new RpcError(RPC.INTERNAL_ERROR, `The inputSchema of tool ${name} is not a JSON Schema this server can check, so the tool cannot be called.`);
    }
    if (violations.length) {
      throw new RpcError(RPC.INVALID_PARAMS, `Invalid arguments for tool ${name}.`, { violations: violations.slice(0, 50).map((v) => ({ path: v.path || '/', message: v.message })) });
    }
    if (req.params.requestState !== undefined || req.params.inputResponses !== undefined) return this.retry(principal, req, tool, args, progress, io);
    // A chain that asks a person needs the caller's elicitation at 2026-07-28: refused before any run, never assumed.
    if (req.era === 'modern' && tool.suspends && !isObject(req.clientCapabilities.elicitation)) {
      throw new RpcError(RPC.MISSING_CLIENT_CAPABILITY, `Tool ${name} asks for input (an approval or an answer) through elicitation, which this request did not declare.`, { requiredCapabilities: ['elicitation'] });
    }
    let started: RunState;
    try {
      started = await this.runs.start(principal, tool.workflowId ?? CALL_TOOL_CHAIN, tool.toolId ? { toolId: tool.toolId, arguments: args } : args, ORIGIN);
    } catch (e) {
      rpcOf(e);
    }
    io.started?.(started.runId);
    if (io.task) return io.task(await this.held(principal, started.runId, progress, io));
    return this.answer(principal, req, tool, args, await this.owned(principal, started.runId, progress, io), io);
  }

  /**
   * The state a task is answered with: the run's, once it first stops (asks for input, or ends) or
   * `taskHoldMs` has passed, whichever is first. The hold is at most one poll interval by default,
   * so the client learns the run's state no later than its first `tasks/get` would have, and a
   * run that asks at once is answered `input_required` with its `inputRequests` instead of
   * `working`. Until the answer is sent the run belongs to the request (a client that leaves
   * cancels it); a hold of 0 answers with the state the run has as soon as it exists.
   */
  private held(principal: Principal, runId: string, progress: ProgressListener | undefined, io: CallIo): Promise<RunState> {
    return this.owned(principal, runId, progress, io, this.config.mcpMount.taskHoldMs);
  }

  /**
   * Waits on a run the request owns until it settles. A client that leaves before the answer is
   * sent cancels it, as cancelRun would (RFC 0198 §G.12: the run belongs to the request until then).
   */
  private async owned(principal: Principal, runId: string, progress: ProgressListener | undefined, io: CallIo, timeoutMs = this.config.mcpMount.callTimeoutMs): Promise<RunState> {
    const state = await this.runs.settled(principal, runId, timeoutMs, { onProgress: progressOf(progress), ...(io.signal ? { signal: io.signal } : {}) });
    if (!io.signal?.aborted || ['completed', 'failed', 'cancelled'].includes(state.status)) return state;
    try {
      return await this.runs.cancel(principal, runId, REQUEST_CANCELLED_REASON);
    } catch (e) {
      // It ended between the read and the cancel: nothing left to stop.
      if (e instanceof DomainError && e.status === 409) return state;
      throw e;
    }
  }

  /** A settled run as the answer to the call: its result, an `input_required` for its open interrupt, or an error result saying why not now. */
  private async answer(principal: Principal, req: McpRequest, tool: ExposedTool, args: Record<string, unknown>, state: RunState, io: CallIo = {}, round = 0): Promise<Record<string, unknown>> {
    const onWire = { ...state, runId: wireId(req, principal, state.runId) };
    const done = callToolResultOf(onWire);
    if (done) return done;
    const open = state.interrupt;
    if (!open || (state.status !== 'waiting-approval' && state.status !== 'waiting-input')) return errorResult(onWire, pendingText(onWire));
    const ask = elicitationOf(open);
    if (!ask) return this.askByUrl(principal, req, tool, args, state);
    if (req.era !== 'modern') {
      if (io.outOfBand && round < OUT_OF_BAND_ROUNDS) return this.askOutOfBand(principal, req, tool, args, state, ask, io, round);
      return errorResult(onWire, pendingText(onWire, 'answering it over MCP needs revision 2026-07-28, or a 2025-06-18 session whose client declared elicitation and accepts a stream'));
    }
    if (!isObject(req.clientCapabilities.elicitation)) return errorResult(onWire, pendingText(onWire, 'the client did not declare the elicitation capability'));
    const requestState = await (await this.states()).mint({ runId: state.runId, interruptId: open.interruptId }, { principal, tool: tool.name, arguments: args });
    return {
      resultType: 'input_required',
      inputRequests: { [wireId(req, principal, open.interruptId)]: { method: 'elicitation/create', params: { mode: 'form', message: ask.message, requestedSchema: ask.requestedSchema } } },
      requestState,
      _meta: { [META_RUN_ID]: wireId(req, principal, state.runId) },
    };
  }

  /**
   * The legacy profile's out-of-band elicitation: the open interrupt is sent to the client as an
   * `elicitation/create` request on the call's own stream, whose id is a signed token naming the run
   * and the interrupt (bound to the caller); the client's response, POSTed to the mount, resolves it
   * (answerOutOfBand, on any replica, only for a caller holding approvals:respond), and the call
   * answers once the run has moved on: its result, the next interrupt asked the same way, or, if
   * nobody answered within the call timeout, the isError result naming the run.
   */
  private async askOutOfBand(principal: Principal, req: McpRequest, tool: ExposedTool, args: Record<string, unknown>, state: RunState, ask: { message: string; requestedSchema: Record<string, unknown> }, io: CallIo, round: number): Promise<Record<string, unknown>> {
    const open = state.interrupt!;
    const id = await (await this.states()).mint({ runId: state.runId, interruptId: open.interruptId }, { principal, ...OUT_OF_BAND });
    io.outOfBand!({ jsonrpc: '2.0', id, method: 'elicitation/create', params: { message: ask.message, requestedSchema: ask.requestedSchema, _meta: { [META_RUN_ID]: state.runId } } });
    const until = Date.now() + this.config.mcpMount.callTimeoutMs;
    let now = state;
    while (now.interrupt?.interruptId === open.interruptId && Date.now() < until && !io.signal?.aborted) {
      await new Promise((r) => setTimeout(r, OUT_OF_BAND_POLL_MS));
      now = await this.runs.get(principal, state.runId);
    }
    if (now.interrupt?.interruptId === open.interruptId) return this.answer(principal, req, tool, args, now, {}, round + 1);
    return this.answer(principal, req, tool, args, await this.owned(principal, state.runId, undefined, io), io, round + 1);
  }

  /**
   * A client's response to an out-of-band `elicitation/create` (a JSON-RPC response POSTed to the
   * mount): its id must be a token this host signed for this caller; an ElicitResult resolves the
   * interrupt it names as an MRTR retry would (approvals:respond, quorum rules), an error response
   * leaves it open. Answers the JSON-RPC error to send back, or undefined when accepted (202).
   */
  async answerOutOfBand(principal: Principal, response: Record<string, unknown>): Promise<{ status: number; code: number; message: string; data?: Record<string, unknown> } | undefined> {
    if (typeof response.id !== 'string') return { status: 400, code: RPC.INVALID_REQUEST, message: 'This mount sent no request with that id.' };
    let payload: { runId: string; interruptId: string };
    try {
      payload = await (await this.states()).verify(response.id, { principal, ...OUT_OF_BAND });
    } catch (e) {
      if (e instanceof RequestStateRefused) return { status: 400, code: RPC.INVALID_REQUEST, message: 'This mount sent no request with that id to this caller, or it expired.', data: { reason: e.reason } };
      throw e;
    }
    const answer = response.result;
    if (!isObject(answer)) return undefined; // an error response: the person did not answer; the interrupt stays open
    if (!['accept', 'decline', 'cancel'].includes(answer.action as string)) return { status: 400, code: RPC.INVALID_PARAMS, message: 'An elicitation/create result is an ElicitResult {action: accept|decline|cancel, content?}.' };
    if (!principal.scopes.has(RESPOND_SCOPE)) return { status: 403, code: RPC.INVALID_REQUEST, message: `Answering an interrupt needs ${RESPOND_SCOPE}, which this credential does not hold.`, data: { error: 'forbidden', requiredScopes: [RESPOND_SCOPE] } };
    const state = await this.runs.get(principal, payload.runId).catch(() => undefined);
    const open = state?.interrupt && state.interrupt.interruptId === payload.interruptId ? state.interrupt : undefined;
    const ask = open ? elicitationOf(open) : undefined;
    if (!state || !open || !ask) return { status: 400, code: RPC.INVALID_PARAMS, message: 'The interrupt this answers is no longer open.', data: { reason: 'consumed' } };
    try {
      await this.resolveOpen(principal, state, open, ask.form, answer);
    } catch (e) {
      if (e instanceof RpcError) return { status: e.status === 200 ? 400 : e.status, code: e.code, message: e.message };
      if (e instanceof DomainError && e.status >= 400 && e.status < 500) return { status: e.status, code: RPC.INVALID_PARAMS, message: e.message, data: { error: e.code } };
      throw e;
    }
    return undefined;
  }

  /**
   * An interrupt whose answer MCP form mode must not carry (a nested answer, a secret; RFC 0199
   * §D.2(d)) is asked in URL mode, on the host's own page, of a client that declared URL-mode
   * elicitation; any other client gets an isError result naming the run. Never form mode.
   */
  private async askByUrl(principal: Principal, req: McpRequest, tool: ExposedTool, args: Record<string, unknown>, state: RunState): Promise<Record<string, unknown>> {
    const onWire = { ...state, runId: wireId(req, principal, state.runId) };
    const open = state.interrupt!;
    // A credential interrupt (RFC 0199 §D.2(a)/(b)): URL mode at its connectUrl, else isError naming the provider; never form mode.
    const credential = open.kind === 'credential';
    const why = credential ? `${credentialNeed(state)}; it is authorized out of band, never through an MCP form` : 'its answer cannot be asked in an MCP form: it is nested or secret';
    if (req.era !== 'modern' || !declaresUrlMode(req)) return errorResult(onWire, pendingText(onWire, `${why}; a client declaring URL-mode elicitation is sent to the host's page to answer it`));
    const key = wireId(req, principal, open.interruptId);
    const params = credential ? credentialElicitation(state, key) : urlElicitation(this.config, req, state, key);
    if (!params) return errorResult(onWire, pendingText(onWire, `${why}, and this host serves no page to answer it on`));
    const requestState = await (await this.states()).mint({ runId: state.runId, interruptId: open.interruptId, url: true }, { principal, tool: tool.name, arguments: args });
    return { resultType: 'input_required', inputRequests: { [key]: { method: 'elicitation/create', params } }, requestState, _meta: { [META_RUN_ID]: onWire.runId } };
  }

  /** The MRTR retry: the signed state names the run and the interrupt; the caller's answer resolves it, if the caller may. */
  private async retry(principal: Principal, req: McpRequest, tool: ExposedTool, args: Record<string, unknown>, progress: ProgressListener | undefined, io: CallIo): Promise<Record<string, unknown>> {
    if (typeof req.params.requestState !== 'string') throw new RpcError(RPC.INVALID_PARAMS, 'A retry carries the requestState of the input_required answer, as a string.');
    let payload: { runId: string; interruptId: string; url?: true };
    try {
      payload = await (await this.states()).verify(req.params.requestState, { principal, tool: tool.name, arguments: args });
    } catch (e) {
      if (e instanceof RequestStateRefused) throw new RpcError(RPC.INVALID_PARAMS, 'The requestState is not one this server issued for this caller and request, or it expired.', { reason: e.reason });
      throw e;
    }
    const responses = req.params.inputResponses;
    const key = wireId(req, principal, payload.interruptId);
    const answer = isObject(responses) ? responses[key] : undefined;
    if (!isObject(answer) || !['accept', 'decline', 'cancel'].includes(answer.action as string)) {
      throw new RpcError(RPC.INVALID_PARAMS, `inputResponses["${key}"] must be an ElicitResult {action: accept|decline|cancel, content?}.`);
    }
    let state: RunState;
    try {
      state = await this.runs.get(principal, payload.runId);
    } catch (e) {
      throw new RpcError(RPC.INVALID_PARAMS, 'The run this requestState names is not visible to this caller.', { reason: 'run' });
    }
    const open = state.interrupt && state.interrupt.interruptId === payload.interruptId ? state.interrupt : undefined;
    const ask = open ? elicitationOf(open) : undefined;
    // URL mode: an accept only says the person went to the host's page; nothing in it resolves the
    // interrupt, so the call is answered from the run as it is now: asked again while still open, its
    // result once the page (or anyone with approvals:respond) has answered it. The state is reusable
    // for that, and it never advances anything.
    if (payload.url && answer.action === 'accept') {
      // A credential interrupt is re-checked by the host (RFC 0199 §D.2(c)): resolved once a credential resolves
      // for the run's starter, else asked again with the same URL.
      if (open?.kind === 'credential' && (await this.credentials.settle(principal.tenant, state.runId, open.nodeId))) {
        return this.answer(principal, req, tool, args, await this.owned(principal, state.runId, progress, io));
      }
      return this.answer(principal, req, tool, args, open ? state : await this.owned(principal, state.runId, progress, io));
    }
    // MCP content never advances a gate by itself: the caller must be an approver.
    if (!principal.scopes.has(RESPOND_SCOPE)) {
      throw new RpcError(RPC.INVALID_REQUEST, `Answering an interrupt needs ${RESPOND_SCOPE}, which this credential does not hold.`, { error: 'forbidden', requiredScopes: [RESPOND_SCOPE] }, 403);
    }
    if (!open) throw new RpcError(RPC.INVALID_PARAMS, 'The interrupt this requestState answers is no longer open: a requestState is used once.', { reason: 'consumed' });
    try {
      await this.resolveOpen(principal, state, open, ask?.form ?? 'answers', answer);
    } catch (e) {
      if (e instanceof RpcError) throw e;
      rpcOf(e);
    }
    io.started?.(state.runId);
    if (io.task) return io.task(await this.held(principal, state.runId, progress, io));
    return this.answer(principal, req, tool, args, await this.owned(principal, state.runId, progress, io));
  }

  /**
   * Resolves a run's open interrupt with an MCP answer (an ElicitResult): the MRTR retry's and a task
   * update's one path to a gate, so both resolve as `resolveInterruptByRun` does (quorum, approvers).
   */
  async resolveOpen(principal: Principal, state: RunState, open: NonNullable<RunState['interrupt']>, form: InterruptForm, answer: Record<string, unknown>): Promise<void> {
    if (answer.action === 'cancel') {
      await this.runs.cancel(principal, state.runId, 'mcp-elicitation-cancelled');
    } else if (form === 'approval') {
      const content = isObject(answer.content) ? answer.content : {};
      const decision = answer.action === 'decline' ? 'reject' : content.action;
      if (decision !== 'accept' && decision !== 'reject') throw new RpcError(RPC.INVALID_PARAMS, 'An approval is answered with content.action accept or reject.');
      await this.interrupts.resolveByRun(principal, state.runId, open.nodeId, { action: decision, ...(typeof content.feedback === 'string' && content.feedback ? { feedback: content.feedback } : {}) });
    } else if (form === 'elicitation') {
      await this.interrupts.resolveByRun(principal, state.runId, open.nodeId, answer.action === 'accept' ? { action: 'accept', content: answer.content ?? {} } : { action: 'decline' });
    } else if (answer.action === 'accept') {
      await this.interrupts.resolveByRun(principal, state.runId, open.nodeId, { answers: answer.content ?? {} });
    } else {
      await this.approvals.deny(principal, open.interruptId, 'declined through MCP');
    }
  }

  async readResource(principal: Principal, req: McpRequest): Promise<Record<string, unknown>> {
    const uri = req.params.uri;
    if (typeof uri !== 'string' || !uri) throw new RpcError(RPC.INVALID_PARAMS, 'params.uri must name a resource.');
    // Only a listed URI is read, compared exactly: nothing is resolved against a path, so nothing traverses.
    const resource = (await this.exposure.resources(principal)).find((r) => r.uri === uri);
    if (!resource) throw new RpcError(RESOURCE_NOT_FOUND, 'Resource not found', { uri });
    const state = await this.runTo(principal, resource.workflowId, { uri });
    if (state.status !== 'completed') throw new RpcError(RPC.INTERNAL_ERROR, `The resource could not be read: ${pendingText(state)}`, { [META_RUN_ID]: state.runId, status: state.status });
    const out = resultOutputs(state);
    const text = typeof out.text === 'string' ? out.text : JSON.stringify(out);
    return { contents: [{ uri, ...(resource.mimeType ? { mimeType: resource.mimeType } : {}), text }], _meta: { [META_RUN_ID]: state.runId } };
  }

  async getPrompt(principal: Principal, req: McpRequest): Promise<Record<string, unknown>> {
    const name = req.params.name;
    if (typeof name !== 'string' || !name) throw new RpcError(RPC.INVALID_PARAMS, 'params.name must name a prompt.');
    const prompt = (await this.exposure.prompts(principal)).find((p) => p.name === name);
    if (!prompt) throw new RpcError(RPC.INVALID_PARAMS, `Unknown prompt: ${name}`, { name });
    const args = this.args(req);
    const bad = Object.entries(args).filter(([, v]) => typeof v !== 'string').map(([k]) => k);
    const missing = prompt.arguments.filter((a) => a.required && typeof args[a.name] !== 'string').map((a) => a.name);
    if (bad.length || missing.length) throw new RpcError(RPC.INVALID_PARAMS, 'Prompt arguments are strings, and the required ones are given.', { notStrings: bad, missing });
    const state = await this.runTo(principal, prompt.workflowId, args);
    if (state.status !== 'completed') throw new RpcError(RPC.INTERNAL_ERROR, `The prompt could not be rendered: ${pendingText(state)}`, { [META_RUN_ID]: state.runId, status: state.status });
    const out = resultOutputs(state);
    const text = typeof out.text === 'string' ? out.text : JSON.stringify(out);
    return { ...(prompt.description ? { description: prompt.description } : {}), messages: [{ role: 'user', content: { type: 'text', text } }], _meta: { [META_RUN_ID]: state.runId } };
  }

  /**
   * The legacy elicitation bridge (RFC 0020 §A.3, `serverMount.elicitationBridge`): an inbound
   * `elicitation/create` starts the tenant's handler chain with `{message, requestedSchema}`; the
   * answer is `pending` while a person has not answered (the run id in `_meta`), else the ElicitResult.
   */
  async bridgeElicitation(principal: Principal, req: McpRequest): Promise<Record<string, unknown>> {
    const workflowId = await this.exposure.elicitationHandler(principal);
    if (!workflowId) throw new RpcError(RPC.METHOD_NOT_FOUND, 'No elicitation handler: install a chain with a core.openwop.mcp.handle-elicitation node.');
    const message = typeof req.params.message === 'string' ? req.params.message.slice(0, 4096) : undefined;
    const requestedSchema = isObject(req.params.requestedSchema) ? req.params.requestedSchema : undefined;
    const state = await this.runTo(principal, workflowId, { ...(message ? { message } : {}), ...(requestedSchema ? { requestedSchema } : {}) }, Math.min(5000, this.config.mcpMount.callTimeoutMs));
    const meta = { [META_RUN_ID]: state.runId };
    if (state.status === 'completed') {
      const out = resultOutputs(state);
      return { action: out.action === 'accept' ? 'accept' : 'decline', ...(isObject(out.content) ? { content: out.content } : {}), _meta: meta };
    }
    if (state.status === 'failed' || state.status === 'cancelled') return { action: 'cancel', _meta: meta };
    return { action: 'pending', _meta: meta };
  }

  private async runTo(principal: Principal, workflowId: string, inputs: Record<string, unknown>, timeoutMs = this.config.mcpMount.callTimeoutMs): Promise<RunState> {
    let started: RunState;
    try {
      started = await this.runs.start(principal, workflowId, inputs, ORIGIN);
    } catch (e) {
      rpcOf(e);
    }
    return this.runs.settled(principal, started.runId, timeoutMs);
  }
}
