import { MCP_ELICITATION_PROFILE } from '../../capabilities/runs';

/** The `_meta` key naming the run behind an MCP answer. */
export const META_RUN_ID = 'io.openwop/runId';
export const META_RUN_STATUS = 'io.openwop/runStatus';

/** The parts of a run snapshot an MCP answer is made from. */
export interface RunState {
  runId: string;
  status: string;
  outputs?: Record<string, unknown>;
  error?: { code: string; message: string };
  interrupt?: {
    interruptId: string;
    kind: string;
    nodeId: string;
    title: string;
    resumeSchema?: Record<string, unknown>;
    data?: Record<string, unknown>;
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A run's outputs as one object: the only sink's own outputs when the chain ends in one node, else every sink's. */
export function resultOutputs(state: RunState): Record<string, unknown> {
  const out = state.outputs ?? {};
  const keys = Object.keys(out);
  if (keys.length === 1 && isObject(out[keys[0]])) return out[keys[0]] as Record<string, unknown>;
  return out;
}

function meta(state: RunState): Record<string, unknown> {
  return { [META_RUN_ID]: state.runId, [META_RUN_STATUS]: state.status };
}

export function errorResult(state: RunState, text: string): Record<string, unknown> {
  return { content: [{ type: 'text', text }], isError: true, _meta: meta(state) };
}

/** A finished run as a CallToolResult: completed → the outputs (text and structured), failed or cancelled → `isError`. */
export function callToolResultOf(state: RunState): Record<string, unknown> | undefined {
  if (state.status === 'completed') {
    const out = resultOutputs(state);
    return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out, isError: false, _meta: meta(state) };
  }
  if (state.status === 'failed') return errorResult(state, `The run failed: ${state.error?.code ?? 'failed'}: ${state.error?.message ?? ''}`.trim());
  if (state.status === 'cancelled') return errorResult(state, 'The run was cancelled.');
  return undefined;
}

/** The text a client reads when a run cannot answer now (still running, waiting on an event, paused, or an interrupt it cannot show). */
export function pendingText(state: RunState, why?: string): string {
  const what = state.interrupt ? `waits on its ${state.interrupt.kind} "${state.interrupt.title}"` : `is ${state.status}`;
  return `Run ${state.runId} ${what}${why ? ` (${why})` : ''}; it goes on. Follow it with GET /v1/runs/${state.runId}${state.interrupt ? '; an approver can answer it in the approvals inbox' : ''}.`;
}

const PRIMITIVE = new Set(['string', 'number', 'integer', 'boolean']);

/** MCP form mode takes a flat object of primitive properties, none secret (RFC 0153 §C.2; RFC 0199 §D.2). */
export function isFormSchema(schema: unknown): schema is Record<string, unknown> {
  if (!isObject(schema) || (schema.type !== undefined && schema.type !== 'object')) return false;
  const props = schema.properties === undefined ? {} : schema.properties;
  if (!isObject(props)) return false;
  return Object.values(props).every((p) => {
    if (!isObject(p) || p.writeOnly === true || p.format === 'password') return false;
    if (Array.isArray(p.enum)) return p.enum.every((e) => typeof e === 'string' || typeof e === 'number' || typeof e === 'boolean');
    return typeof p.type === 'string' && PRIMITIVE.has(p.type);
  });
}

/** The requested schema of an approval answered through MCP: the approval's own resume value, accept or reject and optional feedback. */
export const APPROVAL_FORM = {
  type: 'object',
  properties: {
    action: { type: 'string', title: 'Decision', enum: ['accept', 'reject'] },
    feedback: { type: 'string', title: 'Feedback' },
  },
  required: ['action'],
};

/** How an interrupt's answer is read back: an approval, an MCP elicitation (ElicitResult), or a clarification's answers. */
export type InterruptForm = 'approval' | 'elicitation' | 'answers';

/** The elicitation an open interrupt is shown as, or undefined when form mode cannot carry it. */
export function elicitationOf(i: NonNullable<RunState['interrupt']>): { form: InterruptForm; message: string; requestedSchema: Record<string, unknown> } | undefined {
  if (i.kind === 'approval') return { form: 'approval', message: i.title, requestedSchema: APPROVAL_FORM };
  if (i.kind !== 'clarification') return undefined;
  const data = i.data ?? {};
  const mcp = isObject(data.mcp) ? data.mcp : undefined;
  const asked = data.profile === MCP_ELICITATION_PROFILE ? data.requestedSchema : mcp?.requestedSchema;
  if (data.profile === MCP_ELICITATION_PROFILE || mcp) {
    const schema = isObject(asked) ? asked : { type: 'object', properties: {} };
    return isFormSchema(schema) ? { form: 'elicitation', message: i.title, requestedSchema: schema } : undefined;
  }
  const answers = isObject(i.resumeSchema?.properties) ? (i.resumeSchema!.properties as Record<string, unknown>).answers : undefined;
  if (!isObject(answers)) return undefined;
  const schema = { type: 'object', properties: answers.properties ?? {}, ...(Array.isArray(answers.required) ? { required: answers.required } : {}) };
  return isFormSchema(schema) ? { form: 'answers', message: i.title, requestedSchema: schema } : undefined;
}
