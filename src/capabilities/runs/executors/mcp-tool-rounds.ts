import { NodeExecutionContext, NodeExecutionError, ToolCallResult } from '@openwop-host/plugin-sdk';
import { completedCall, failedCall, McpCallRound, McpInputRequest, McpRoundSession } from '../../tool-catalog';

/** The one elicitation round a node can wait for: the engine keeps one interrupt per node execution. */
export const RUN_MRTR_MAX_ROUNDS = 1;

/** The effect key of an MCP tool call round (the initial call and each retry are the node's next effects). */
const EFFECT_KEY = 'mcp:tools/call';

/** The resume schema of an elicitation: an MCP ElicitResult, its content checked against the requested schema. */
export function elicitationResumeSchema(requestedSchema: Record<string, unknown> | undefined): Record<string, unknown> {
  const content = requestedSchema && typeof requestedSchema === 'object' ? requestedSchema : { type: 'object' };
  return {
    type: 'object',
    required: ['action'],
    properties: { action: { enum: ['accept', 'decline'] }, content },
    additionalProperties: false,
    if: { properties: { action: { const: 'accept' } } },
    then: { required: ['action', 'content'] },
  };
}

/** The one form-mode elicitation of an `input_required` answer, or a refusal the node fails with. */
function elicitationOf(inputRequests: Record<string, McpInputRequest>): { key: string; message: string; requestedSchema?: Record<string, unknown> } {
  const entries = Object.entries(inputRequests);
  if (entries.length !== 1) throw new NodeExecutionError('mcp_input_unsupported', `The MCP tool asked for ${entries.length} inputs at once; a run step answers one.`);
  const [key, ask] = entries[0];
  const params = ask.params ?? {};
  if (ask.method !== 'elicitation/create' || (params.mode !== undefined && params.mode !== 'form')) {
    throw new NodeExecutionError('mcp_input_unsupported', `The MCP tool asked for ${ask.method || 'input'}${params.mode ? ` (${String(params.mode)} mode)` : ''}, which a run step does not answer.`);
  }
  return {
    key,
    message: typeof params.message === 'string' && params.message ? params.message : 'The MCP tool asks for input.',
    ...(params.requestedSchema && typeof params.requestedSchema === 'object' ? { requestedSchema: params.requestedSchema as Record<string, unknown> } : {}),
  };
}

/**
 * One logical MCP tool call of a run step, with MRTR (RFC 0153 §C.1). Every round is one of the
 * node's effects (`ctx.effect`): its answer is persisted in the run's invocation log, so when the node
 * runs again after its interrupt is resolved the first round is read back (never sent again) and
 * only the retry goes out, on a new request id, with `inputResponses` and the `requestState` exactly
 * as the server sent it. An elicitation suspends the node on a `clarification` interrupt (`data.mcp`
 * carries the input request's key, mode and schema); its resume value is the ElicitResult. A run
 * cancelled meanwhile never re-executes the node, so nothing is sent; a replay reads the recorded
 * outputs and performs no effect. A rejected interrupt answers the server `decline`.
 */
export async function callMcpTool(session: McpRoundSession, args: Record<string, unknown>, ctx: NodeExecutionContext, interruptible: boolean): Promise<ToolCallResult> {
  const r = await mcpToolRounds(session, args, ctx, { interruptible, effectKey: EFFECT_KEY });
  return 'failed' in r ? failedCall(r.failed) : completedCall(r.result);
}

/**
 * The rounds of one logical MCP tool call, as `callMcpTool` describes them: the complete result of
 * the last round exactly as the session answered it, or what a round failed with (the step's own
 * refusals, the interrupt's and the rounds bound, are thrown). Shared with `ctx.mcp.callTool`, whose
 * rounds carry the server's result unaltered and whose effect key names its server and tool.
 */
export async function mcpToolRounds(
  session: Pick<McpRoundSession, 'mcp' | 'round'>,
  args: Record<string, unknown>,
  ctx: NodeExecutionContext,
  o: { interruptible: boolean; effectKey: string },
): Promise<{ result: Record<string, unknown> } | { failed: unknown }> {
  const { interruptible } = o;
  const perform = (run: () => Promise<McpCallRound>): Promise<McpCallRound> => (ctx.effect ? ctx.effect(o.effectKey, run) : run());
  let round: McpCallRound;
  try {
    round = await perform(() => session.round(args, undefined, ctx.signal));
  } catch (e) {
    return { failed: e };
  }
  for (let rounds = 0; round.resultType === 'input_required'; rounds++) {
    if (!interruptible) throw new NodeExecutionError('mcp_input_unsupported', 'The MCP tool asked for input, which this step cannot ask for (its one interrupt is taken: an approval, several calls in one session, or an earlier question).');
    if (rounds >= RUN_MRTR_MAX_ROUNDS) throw new NodeExecutionError('mcp_mrtr_rounds_exceeded', `The MCP tool asked for input again after ${RUN_MRTR_MAX_ROUNDS} answered round in one step.`);
    const ask = elicitationOf(round.inputRequests);
    const { mcp } = session;
    let response: Record<string, unknown>;
    try {
      response = (await ctx.interrupt({
        kind: 'clarification',
        title: ask.message,
        resumeSchema: elicitationResumeSchema(ask.requestedSchema),
        data: {
          questions: [{ id: ask.key, question: ask.message }],
          mcp: { inputRequestKey: ask.key, mode: 'form', ...(ask.requestedSchema ? { requestedSchema: ask.requestedSchema } : {}), serverId: mcp.serverId, tool: mcp.toolName, protocolVersion: mcp.protocolVersion },
        },
      })) as Record<string, unknown>;
    } catch (e) {
      // Rejected: the person declined to answer, which the server is told. Cancelled or expired: nothing is sent.
      if (!(e instanceof NodeExecutionError) || e.code !== 'interrupt_rejected') throw e;
      response = { action: 'decline' };
    }
    const state = round.requestState;
    const retry = { inputResponses: { [ask.key]: response }, ...(state !== undefined ? { requestState: state } : {}) };
    try {
      round = await perform(() => session.round(args, retry, ctx.signal));
    } catch (e) {
      return { failed: e };
    }
  }
  return { result: round.result };
}
