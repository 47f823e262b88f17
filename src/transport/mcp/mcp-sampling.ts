import { Inject, Injectable } from '@nestjs/common';
import { TransportRunsService } from '../../capabilities/runs';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { DomainError } from '../../platform/errors/domain-error';
import type { Principal } from '../../platform/identity/principal';
import { McpExposure, SamplingHandler } from './mcp-exposure';
import { META_RUN_ID, META_RUN_STATUS, pendingText, RunState } from './mcp-run-projection';
import { McpRequest, RPC, RpcError } from './mcp-wire';

const ORIGIN = { transport: 'mcp', trustBoundary: 'untrusted' } as const;
/** The most messages a request may carry into a run's inputs. */
const MAX_MESSAGES = 100;
const ROLES = new Set(['user', 'assistant']);
/** Statuses in which a handler run waits on a person; the bridge keeps waiting (up to the call timeout). */
const WAITING = new Set(['waiting-approval', 'waiting-input']);
const WAIT_POLL_MS = 250;

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The text blocks of a message's content (one block, or an array of blocks). */
function textsOf(content: unknown): string[] {
  const blocks = Array.isArray(content) ? content : [content];
  return blocks.filter(isObject).filter((b) => b.type === 'text' && typeof b.text === 'string').map((b) => b.text as string);
}

/** `sampling/createMessage` params, checked, as the run inputs a handler chain starts with. */
export function samplingInputs(params: Record<string, unknown>): Record<string, unknown> {
  const problems: string[] = [];
  const messages = params.messages;
  if (!Array.isArray(messages) || messages.length === 0 || messages.length > MAX_MESSAGES) problems.push(`params.messages must be an array of 1 to ${MAX_MESSAGES} messages`);
  else
    messages.forEach((m, i) => {
      if (!isObject(m) || !ROLES.has(m.role as string)) problems.push(`params.messages[${i}].role must be user or assistant`);
      else if (!(isObject(m.content) && typeof m.content.type === 'string') && !(Array.isArray(m.content) && m.content.length > 0 && m.content.every((b) => isObject(b) && typeof b.type === 'string'))) {
        problems.push(`params.messages[${i}].content must be a content block {type, ...} (or an array of them)`);
      }
    });
  const maxTokens = params.maxTokens;
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) problems.push('params.maxTokens must be a positive integer');
  if (params.systemPrompt !== undefined && typeof params.systemPrompt !== 'string') problems.push('params.systemPrompt must be a string');
  if (params.temperature !== undefined && typeof params.temperature !== 'number') problems.push('params.temperature must be a number');
  if (params.stopSequences !== undefined && !(Array.isArray(params.stopSequences) && params.stopSequences.every((s) => typeof s === 'string'))) problems.push('params.stopSequences must be an array of strings');
  if (problems.length) throw new RpcError(RPC.INVALID_PARAMS, 'Invalid sampling/createMessage params.', { violations: problems });
  const list = messages as Array<{ role: string; content: unknown }>;
  const lastUser = [...list].reverse().find((m) => m.role === 'user');
  return {
    messages: list,
    prompt: lastUser ? textsOf(lastUser.content).join('\n') : '',
    maxTokens,
    ...(typeof params.systemPrompt === 'string' ? { systemPrompt: params.systemPrompt } : {}),
    ...(typeof params.temperature === 'number' ? { temperature: params.temperature } : {}),
    ...(Array.isArray(params.stopSequences) ? { stopSequences: params.stopSequences } : {}),
    ...(isObject(params.metadata) ? { metadata: params.metadata } : {}),
  };
}

/**
 * The handler a request is for: the first of the caller's `modelPreferences.hints` (in order) that
 * is a substring of a handler's model name picks that handler (the MCP hint rule); without a
 * matching hint, the first handler by chain id.
 */
export function pickHandler(handlers: SamplingHandler[], params: Record<string, unknown>): SamplingHandler | undefined {
  const prefs = isObject(params.modelPreferences) ? params.modelPreferences : {};
  const hints = Array.isArray(prefs.hints) ? prefs.hints.filter(isObject).map((h) => h.name).filter((n): n is string => typeof n === 'string' && n.length > 0) : [];
  for (const hint of hints) {
    const hit = handlers.find((h) => h.model.includes(hint));
    if (hit) return hit;
  }
  return handlers[0];
}

/**
 * The legacy sampling bridge (RFC 0020 §A point 3, `serverMount.samplingBridge`, the 2025-06-18
 * profile only): an inbound `sampling/createMessage` starts the caller's sampling handler chain as a
 * durable run (transport `mcp`, untrusted inputs), waits for it (a step a person answers included), and answers the
 * `CreateMessageResult` its `core.openwop.mcp.handle-sampling` step produced. A run that fails or is
 * cancelled, one that stops on an interrupt or outlasts the call timeout, and a reply that is not a
 * text CreateMessageResult answer `-32603` with the run id and status in `error.data`: never a
 * made-up message.
 */
@Injectable()
export class McpSampling {
  constructor(
    private readonly exposure: McpExposure,
    private readonly runs: TransportRunsService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  /**
   * Waits for the handler run's reply, at most the call timeout: through its steps, and through any
   * step that waits on a person (a clarification or an approval answered in the inbox: a person can
   * be the model), since a CreateMessageResult has no "ask later".
   */
  private async untilAnswered(principal: Principal, runId: string): Promise<RunState> {
    const until = Date.now() + this.config.mcpMount.callTimeoutMs;
    let state: RunState = await this.runs.settled(principal, runId, this.config.mcpMount.callTimeoutMs);
    while (WAITING.has(state.status) && Date.now() < until) {
      await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
      state = await this.runs.get(principal, runId);
      if (!WAITING.has(state.status)) state = await this.runs.settled(principal, runId, Math.max(1, until - Date.now()));
    }
    return state;
  }

  async createMessage(principal: Principal, req: McpRequest): Promise<Record<string, unknown>> {
    const inputs = samplingInputs(req.params);
    const handler = pickHandler(await this.exposure.samplingHandlers(principal), req.params);
    if (!handler) throw new RpcError(RPC.METHOD_NOT_FOUND, 'No sampling handler: install a chain that ends in a core.openwop.mcp.handle-sampling step.');
    let state: RunState;
    try {
      const started = await this.runs.start(principal, handler.workflowId, inputs, ORIGIN);
      state = await this.untilAnswered(principal, started.runId);
    } catch (e) {
      if (e instanceof DomainError && e.status >= 400 && e.status < 500) throw new RpcError(e.status === 403 ? RPC.INVALID_REQUEST : RPC.INVALID_PARAMS, e.message, { error: e.code, ...(e.details ?? {}) }, e.status === 403 ? 403 : 200);
      throw e;
    }
    const data = { [META_RUN_ID]: state.runId, [META_RUN_STATUS]: state.status, workflowId: handler.workflowId };
    if (state.status === 'failed' || state.status === 'cancelled') {
      throw new RpcError(RPC.INTERNAL_ERROR, `The sampling handler chain ${handler.workflowId} ${state.status}${state.error ? `: ${state.error.code}: ${state.error.message}` : ''}`, { ...data, ...(state.error ? { error: state.error } : {}) });
    }
    if (state.status !== 'completed') throw new RpcError(RPC.INTERNAL_ERROR, `The sampling handler chain has not answered: ${pendingText(state)}`, data);
    const out = state.outputs?.[handler.nodeId];
    const content = isObject(out) ? out.content : undefined;
    if (!isObject(out) || out.role !== 'assistant' || !isObject(content) || content.type !== 'text' || typeof content.text !== 'string') {
      throw new RpcError(RPC.INTERNAL_ERROR, `The sampling handler chain ${handler.workflowId} completed without a CreateMessageResult from its step ${handler.nodeId}.`, data);
    }
    return {
      role: 'assistant',
      content: { type: 'text', text: content.text },
      model: typeof out.model === 'string' && out.model ? out.model : handler.model,
      stopReason: typeof out.stopReason === 'string' ? out.stopReason : 'endTurn',
      _meta: { [META_RUN_ID]: state.runId },
    };
  }
}
