/**
 * The MCP Tasks extension (`io.modelcontextprotocol/tasks`, ext-tasks 2026-07-28; RFC 0198) on the
 * v2 mount: a task is the run. The official SDK's 2.x client reads the extension from
 * `server/discover` and drives the disconnect (its request's AbortSignal); the task methods, which
 * the SDK has no runtime for at 2026-07-28, go as raw JSON-RPC. Get, update (resolved once), cancel,
 * subscriptions/listen on SSE, a client leaving before the answer cancels the run it owns, another
 * tenant's task is not found exactly like an unknown one, the REST scopes are required, and a
 * second host on the same database serves the same task (nothing is held in memory).
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, waitForStatus } from '../runs/run-kit';

const MOUNT = '/host/openwop/mcp';
const V1_MOUNT = '/v1/host/openwop/mcp';
const TASKS = 'io.modelcontextprotocol/tasks';
const V = 'io.modelcontextprotocol/protocolVersion';
const C = 'io.modelcontextprotocol/clientCapabilities';
const TASK_CAPS = { elicitation: {}, extensions: { [TASKS]: {} } };

const GATE = {
  nodes: [
    { id: 'expose', typeId: 'core.openwop.mcp.expose-tool', config: { name: 'gate_tool', inputSchema: { type: 'object', properties: {} } } },
    { id: 'gate', typeId: 'core.approval', config: { title: 'Ship it?', allowSelfApproval: true } },
    { id: 'done', typeId: 'core.noop', config: { shipped: true } },
  ],
  edges: [{ from: 'expose', to: 'gate' }, { from: 'gate', to: 'done' }],
};
const LONG = {
  nodes: [
    { id: 'expose', typeId: 'core.openwop.mcp.expose-tool', config: { name: 'long_tool', inputSchema: { type: 'object', properties: {} } } },
    { id: 'wait', typeId: 'core.delay', config: { ms: 120_000 } },
  ],
  edges: [{ from: 'expose', to: 'wait' }],
};

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let seq = 1;
function headers(key: string | undefined, method: string, name?: string, accept = 'application/json, text/event-stream'): Record<string, string> {
  return { 'content-type': 'application/json', accept, 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method, ...(name ? { 'Mcp-Name': name } : {}), ...(key ? { authorization: `Bearer ${key}` } : {}) };
}
function envelope(method: string, params: Json, caps: Json): Json {
  return { jsonrpc: '2.0', id: seq++, method, params: { ...params, _meta: { [V]: '2026-07-28', [C]: caps } } };
}

/** One JSON-RPC request to a mount, answered as JSON. */
async function rpc(base: string, key: string, method: string, params: Json, o: { caps?: Json; mount?: string } = {}): Promise<{ status: number; result?: Json; error?: Json }> {
  const name = typeof params.taskId === 'string' ? params.taskId : typeof params.name === 'string' ? params.name : undefined;
  const res = await fetch(`${base}${o.mount ?? MOUNT}`, { method: 'POST', headers: headers(key, method, name), body: JSON.stringify(envelope(method, params, o.caps ?? TASK_CAPS)) });
  const body = (await res.json()) as Json;
  return { status: res.status, result: body.result, error: body.error };
}

/** The JSON-RPC messages of an SSE response, read until `until` says stop or the stream ends. */
async function sse(res: Response, until: (messages: Json[]) => boolean): Promise<Json[]> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  const messages: Json[] = [];
  let buf = '';
  while (!until(messages)) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let cut: number;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const data = buf.slice(0, cut).split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
      buf = buf.slice(cut + 2);
      if (data) messages.push(JSON.parse(data) as Json);
    }
  }
  await reader.cancel().catch(() => undefined);
  return messages;
}

describe('MCP Tasks on the v2 mount (e2e)', () => {
  let t: TestApp;
  let base: string;
  let caller: string;
  let reader: string;
  let noCancel: string;
  let otherTenant: string;

  beforeAll(async () => {
    t = await createTestApp();
    await installChains(t, 'default', 'vendor.test.mcp-tasks', { 'vendor.test.gate': GATE, 'vendor.test.long': LONG });
    caller = await t.key({ principal: 'agent', scopes: ['tools:read', 'runs:create', 'runs:read', 'runs:cancel', 'approvals:respond'] });
    reader = await t.key({ principal: 'reader', scopes: ['tools:read', 'runs:create'] });
    noCancel = await t.key({ principal: 'intern', scopes: ['tools:read', 'runs:create', 'runs:read'] });
    otherTenant = await t.key({ tenant: 'other', principal: 'agent', scopes: ['tools:read', 'runs:create', 'runs:read', 'runs:cancel', 'approvals:respond'] });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.getHttpServer().address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  /** Starts a task of `tool` and answers its CreateTaskResult. */
  async function task(tool: string): Promise<Json> {
    const r = await rpc(base, caller, 'tools/call', { name: tool, arguments: {} });
    expect(r.error).toBeUndefined();
    expect(r.result).toMatchObject({ resultType: 'task', taskId: expect.any(String), ttlMs: null });
    return r.result!;
  }

  /** The run id behind a task id (`default~2F<uuid>`). */
  const runOf = (taskId: string): string => taskId.replace(/^default~2F/, '');

  async function untilStatus(key: string, taskId: string, wanted: string, at = base): Promise<Json> {
    for (let i = 0; i < 300; i++) {
      const g = await rpc(at, key, 'tasks/get', { taskId });
      if (g.error || g.result?.status === wanted) return g.result ?? { error: g.error };
      await new Promise((ok) => setTimeout(ok, 100));
    }
    throw new Error(`task ${taskId} never reached ${wanted}`);
  }

  const runEvents = async (runId: string): Promise<Json[]> => (await t.http('GET', `/v1/runs/${runId}/events`, { token: caller, headers: { accept: 'application/json' } })).body.events;

  /** The ids of the `vendor.test.long` runs so far. */
  const longRuns = async (): Promise<Set<string>> => new Set((await t.ds.query(`SELECT "id" FROM "run" WHERE "workflow_id" = 'vendor.test.long'`)).map((r: { id: string }) => r.id));

  /** The `vendor.test.long` run a call just started (running, and not among `before`), polled for up to 10 s. */
  async function startedLongRun(before: ReadonlySet<string>): Promise<string | undefined> {
    for (let i = 0; i < 200; i++) {
      const rows: Array<{ id: string }> = await t.ds.query(`SELECT "id" FROM "run" WHERE "workflow_id" = 'vendor.test.long' AND "status" = 'running'`);
      const runId = rows.find((r) => !before.has(r.id))?.id;
      if (runId) return runId;
      await new Promise((ok) => setTimeout(ok, 50));
    }
    return undefined;
  }

  /**
   * The run's `run.cancelled`, once its status reads cancelled. The event log as read right after the
   * status (once, in a whole-suite run, it did not hold the run.cancelled the status promised yet) is
   * read until it does, for at most a few seconds.
   */
  async function cancelledEvent(runId: string): Promise<Json | undefined> {
    await waitForStatus(t, caller, runId, ['cancelled']);
    for (let i = 0; i < 50; i++) {
      const cancelled = (await runEvents(runId)).find((e) => e.type === 'run.cancelled');
      if (cancelled) return cancelled;
      await new Promise((ok) => setTimeout(ok, 100));
    }
    return undefined;
  }

  it('the official client reads the extension in the v2 mount\'s server/discover; the v1 mount does not list it', async () => {
    const client = new Client({ name: 'tasks-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} }, extensions: { [TASKS]: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}${MOUNT}`), { requestInit: { headers: { Authorization: `Bearer ${caller}` } } }));
    try {
      expect(client.getServerCapabilities()?.extensions).toEqual({ [TASKS]: {} });
    } finally {
      await client.close();
    }
    const v1 = await rpc(base, caller, 'server/discover', {}, { mount: V1_MOUNT, caps: {} });
    expect(v1.result?.capabilities.extensions).toBeUndefined();
    // The task methods are the v2 mount's only.
    expect((await rpc(base, caller, 'tasks/get', { taskId: 'default~2Fx' }, { mount: V1_MOUNT })).error?.code).toBe(-32601);
  });

  it('a call declaring the extension is answered with its run as a task, input_required keyed by the interrupt; get needs the extension', async () => {
    const created = await task('gate_tool');
    expect(created.taskId).toMatch(/^default~2F[0-9a-f-]{36}$/);
    expect(['working', 'input_required']).toContain(created.status);
    const run = await t.http('GET', `/v1/runs/${runOf(created.taskId)}`, { token: caller });
    expect(run.status).toBe(200);
    expect(run.body.workflowId).toBe('vendor.test.gate');
    const waiting = await untilStatus(caller, created.taskId, 'input_required');
    const interruptId = (await t.http('GET', `/v1/runs/${runOf(created.taskId)}`, { token: caller })).body.interrupt.interruptId;
    expect(Object.keys(waiting.inputRequests)).toEqual([`default/${interruptId}`]);
    expect(waiting.inputRequests[`default/${interruptId}`]).toMatchObject({ method: 'elicitation/create', params: { mode: 'form', requestedSchema: { required: ['action'] } } });
    // Reading appends nothing to the run's log.
    const before = (await runEvents(runOf(created.taskId))).length;
    await rpc(base, caller, 'tasks/get', { taskId: created.taskId });
    expect((await runEvents(runOf(created.taskId))).length).toBe(before);
    const noCap = await rpc(base, caller, 'tasks/get', { taskId: created.taskId }, { caps: {} });
    expect([noCap.status, noCap.error?.code]).toEqual([400, -32021]);
    // Without the extension the same call is not a task.
    const plain = await rpc(base, caller, 'tools/call', { name: 'gate_tool', arguments: {} }, { caps: { elicitation: {} } });
    expect(plain.result?.resultType).toBe('input_required');
    await rpc(base, caller, 'tasks/cancel', { taskId: created.taskId });
  });

  it('the answer waits for the run to first stop: an approval\'s task is input_required in the answer itself, and the run already waits', async () => {
    const created = await task('gate_tool');
    expect(created.status).toBe('input_required');
    const run = await t.http('GET', `/v1/runs/${runOf(created.taskId)}`, { token: caller });
    expect(run.body.status).toBe('waiting-approval');
    expect(Object.keys(created.inputRequests)).toEqual([`default/${run.body.interrupt.interruptId}`]);
    await rpc(base, caller, 'tasks/cancel', { taskId: created.taskId });
  });

  it('a run still going when the hold ends is answered working then (OPENWOP_MCP_TASK_HOLD_MS), and with no hold as soon as it exists', async () => {
    const hold = t.config.mcpMount.taskHoldMs;
    try {
      t.config.mcpMount.taskHoldMs = 400;
      const at = Date.now();
      const held = await task('long_tool');
      expect(Date.now() - at).toBeGreaterThanOrEqual(400);
      expect(held.status).toBe('working');
      t.config.mcpMount.taskHoldMs = 0;
      const now = await task('long_tool');
      expect(now.status).toBe('working');
      expect((await t.http('GET', `/v1/runs/${runOf(now.taskId)}`, { token: caller })).status).toBe(200);
      for (const x of [held, now]) await rpc(base, caller, 'tasks/cancel', { taskId: x.taskId });
    } finally {
      t.config.mcpMount.taskHoldMs = hold;
    }
  });

  it('a client that leaves while its task is held cancels the run: until the answer is sent the run is the request\'s', async () => {
    const hold = t.config.mcpMount.taskHoldMs;
    t.config.mcpMount.taskHoldMs = 60_000;
    try {
      const before = await longRuns();
      const gone = new AbortController();
      const call = fetch(`${base}${MOUNT}`, { method: 'POST', signal: gone.signal, headers: headers(caller, 'tools/call', 'long_tool'), body: JSON.stringify(envelope('tools/call', { name: 'long_tool', arguments: {} }, TASK_CAPS)) }).catch((e: unknown) => e);
      const runId = await startedLongRun(before);
      expect(runId).toBeDefined();
      gone.abort();
      // No answer came before the client left: the fetch ends aborted, not with a task.
      expect(((await call) as { name?: string }).name).toBe('AbortError');
      expect((await cancelledEvent(runId!))?.payload.reason).toBe('mcp-request-cancelled');
    } finally {
      t.config.mcpMount.taskHoldMs = hold;
    }
  });

  it('tasks/update answered twice resolves the approval once and the task completes with the tool result', async () => {
    const { taskId } = await task('gate_tool');
    const waiting = await untilStatus(caller, taskId, 'input_required');
    const key = Object.keys(waiting.inputRequests)[0];
    const answer = { inputResponses: { [key]: { action: 'accept', content: { action: 'accept' } } } };
    const u1 = await rpc(base, caller, 'tasks/update', { taskId, ...answer });
    const u2 = await rpc(base, caller, 'tasks/update', { taskId, ...answer });
    expect([u1.error, u1.result?.resultType, u2.error, u2.result?.resultType]).toEqual([undefined, 'complete', undefined, 'complete']);
    const done = await untilStatus(caller, taskId, 'completed');
    expect(done.result).toMatchObject({ isError: false, structuredContent: { shipped: true } });
    const [gate] = await t.ds.query(`SELECT count(*)::int AS "votes" FROM "approval_decision" d JOIN "approval" a ON a."id" = d."approval_id" WHERE a."run_id" = $1`, [runOf(taskId)]);
    expect(gate.votes).toBe(1);
    // One resolution, in the run's own log.
    expect((await runEvents(runOf(taskId))).filter((e) => e.type === 'interrupt.resolved').map((e) => e.payload)).toEqual([expect.objectContaining({ kind: 'approval', resumeValue: expect.objectContaining({ action: 'accept' }) })]);
  });

  it('a non-approver\'s update resolves nothing', async () => {
    const { taskId } = await task('gate_tool');
    const waiting = await untilStatus(caller, taskId, 'input_required');
    const key = Object.keys(waiting.inputRequests)[0];
    const u = await rpc(base, noCancel, 'tasks/update', { taskId, inputResponses: { [key]: { action: 'accept', content: { action: 'accept' } } } });
    expect([u.status, u.error?.code, u.error?.data?.requiredScopes]).toEqual([403, -32600, ['approvals:respond']]);
    expect((await rpc(base, caller, 'tasks/get', { taskId })).result?.status).toBe('input_required');
    await rpc(base, caller, 'tasks/cancel', { taskId });
  });

  it('tasks/cancel cancels the run as cancelRun does; on a terminal task it is acknowledged and appends nothing', async () => {
    const { taskId } = await task('long_tool');
    const c = await rpc(base, caller, 'tasks/cancel', { taskId });
    expect([c.error, c.result?.resultType]).toEqual([undefined, 'complete']);
    await waitForStatus(t, caller, runOf(taskId), ['cancelled']);
    expect((await rpc(base, caller, 'tasks/get', { taskId })).result).toMatchObject({ status: 'cancelled', taskId });
    const events = await runEvents(runOf(taskId));
    expect(events.find((e) => e.type === 'run.cancelled')?.payload.reason).toBe('mcp-task-cancelled');
    const again = await rpc(base, caller, 'tasks/cancel', { taskId });
    expect([again.error, again.result?.resultType]).toEqual([undefined, 'complete']);
    expect((await runEvents(runOf(taskId))).length).toBe(events.length);
  });

  it('needs the REST scopes: runs:read to read a task, runs:cancel to cancel it', async () => {
    const { taskId } = await task('long_tool');
    const get = await rpc(base, reader, 'tasks/get', { taskId });
    expect([get.status, get.error?.code, get.error?.data?.requiredScopes]).toEqual([403, -32600, ['runs:read']]);
    const cancel = await rpc(base, noCancel, 'tasks/cancel', { taskId });
    expect([cancel.status, cancel.error?.code, cancel.error?.data?.requiredScopes]).toEqual([403, -32600, ['runs:cancel']]);
    expect((await rpc(base, caller, 'tasks/get', { taskId })).result?.status).toBe('working');
    await rpc(base, caller, 'tasks/cancel', { taskId });
  });

  it('another tenant\'s task is not found exactly as an unknown one, and its cancel touches nothing', async () => {
    const { taskId } = await task('long_tool');
    const unknown = await rpc(base, caller, 'tasks/get', { taskId: `default~2F${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}` });
    const swapped = await rpc(base, caller, 'tasks/get', { taskId: taskId.replace(/^default/, 'other') });
    const foreign = await rpc(base, otherTenant, 'tasks/get', { taskId });
    const shapes = [unknown, swapped, foreign].map((r) => JSON.stringify([r.status, r.error, r.result]));
    expect(JSON.parse(shapes[0])).toEqual([200, { code: -32602, message: 'Task not found.' }, null]);
    expect(new Set(shapes).size).toBe(1);
    expect((await rpc(base, otherTenant, 'tasks/cancel', { taskId })).error?.code).toBe(-32602);
    expect((await rpc(base, otherTenant, 'tasks/update', { taskId, inputResponses: {} })).error?.code).toBe(-32602);
    expect((await rpc(base, caller, 'tasks/get', { taskId })).result?.status).toBe('working');
    await rpc(base, caller, 'tasks/cancel', { taskId });
  });

  it('subscriptions/listen acknowledges the tasks the caller may read and streams their states on SSE', async () => {
    const { taskId } = await task('gate_tool');
    await untilStatus(caller, taskId, 'input_required');
    const listen = (key: string) =>
      fetch(`${base}${MOUNT}`, { method: 'POST', headers: headers(key, 'subscriptions/listen', undefined, 'text/event-stream, application/json'), body: JSON.stringify(envelope('subscriptions/listen', { notifications: { taskIds: [taskId] } }, TASK_CAPS)) });
    const mine = await listen(caller);
    expect(mine.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const first = await sse(mine, (m) => m.some((x) => x.method === 'notifications/tasks'));
    expect(first[0]).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [taskId] } } });
    expect(first.find((x) => x.method === 'notifications/tasks')?.params).toMatchObject({ taskId, status: 'input_required' });
    // A second listen follows the task to its end as it is answered elsewhere.
    const following = await listen(caller);
    const key = Object.keys((await rpc(base, caller, 'tasks/get', { taskId })).result!.inputRequests)[0];
    const streamed = sse(following, (m) => m.some((x) => x.method === 'notifications/tasks' && x.params.status === 'completed'));
    await rpc(base, caller, 'tasks/update', { taskId, inputResponses: { [key]: { action: 'accept', content: { action: 'accept' } } } });
    const all = await streamed;
    expect(all.filter((x) => x.method === 'notifications/tasks').pop()?.params).toMatchObject({ taskId, status: 'completed', result: { isError: false } });
    expect(all.some((x) => x.method === 'notifications/cancelled')).toBe(false);
    // Another tenant's listen acknowledges none of it.
    const theirs = await sse(await listen(otherTenant), (m) => m.length > 0);
    expect(theirs[0]).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [] } } });
    // Without the extension declared, listening for tasks is refused.
    const bare = await fetch(`${base}${MOUNT}`, { method: 'POST', headers: headers(caller, 'subscriptions/listen', undefined, 'text/event-stream, application/json'), body: JSON.stringify(envelope('subscriptions/listen', { notifications: { taskIds: [taskId] } }, {})) });
    expect([bare.status, ((await bare.json()) as Json).error.code]).toEqual([400, -32021]);
  });

  it('a client that leaves before the answer cancels the run its call started (the official client\'s abort)', async () => {
    const client = new Client({ name: 'tasks-test', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}${MOUNT}`), { requestInit: { headers: { Authorization: `Bearer ${caller}` } } }));
    try {
      const before = await longRuns();
      const gone = new AbortController();
      const call = client.callTool({ name: 'long_tool', arguments: {} }, { signal: gone.signal }).catch((e: unknown) => e);
      const runId = await startedLongRun(before);
      expect(runId).toBeDefined();
      gone.abort();
      await call;
      expect((await cancelledEvent(runId!))?.payload.reason).toBe('mcp-request-cancelled');
    } finally {
      await client.close();
    }
  });

  it('a blocking call preferring a stream has it opened at run start; a REST cancel ends it isError, with no notifications/cancelled', async () => {
    const gone = new AbortController();
    const res = await fetch(`${base}${MOUNT}`, { method: 'POST', signal: gone.signal, headers: headers(caller, 'tools/call', 'long_tool', 'text/event-stream, application/json'), body: JSON.stringify(envelope('tools/call', { name: 'long_tool', arguments: {} }, {})) });
    // The 120 s run is still going: the headers came at its start.
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const [row] = await t.ds.query(`SELECT "id" FROM "run" WHERE "workflow_id" = 'vendor.test.long' AND "status" IN ('pending', 'running') ORDER BY "created_at" DESC LIMIT 1`);
    expect((await t.http('POST', `/v1/runs/${row.id}/cancel`, { token: caller, body: {} })).status).toBe(200);
    const messages = await sse(res, (m) => m.some((x) => 'result' in x || 'error' in x));
    expect(messages.some((x) => x.method === 'notifications/cancelled')).toBe(false);
    expect(messages.pop()?.result).toMatchObject({ isError: true });
    gone.abort();
  });

  it('a client that stays gets the answer, and a second host on the same database serves the same task', async () => {
    const { taskId } = await task('gate_tool');
    await untilStatus(caller, taskId, 'input_required');
    const second = await createTestApp({ database: t.databaseName });
    try {
      await second.app.listen({ port: 0, host: '127.0.0.1' });
      const addr = second.app.getHttpServer().address();
      const other = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
      const got = await rpc(other, caller, 'tasks/get', { taskId });
      expect(got.result).toMatchObject({ taskId, status: 'input_required' });
      const key = Object.keys(got.result!.inputRequests)[0];
      expect((await rpc(other, caller, 'tasks/update', { taskId, inputResponses: { [key]: { action: 'accept', content: { action: 'accept' } } } })).result?.resultType).toBe('complete');
      expect((await untilStatus(caller, taskId, 'completed', other)).result).toMatchObject({ isError: false });
    } finally {
      await second.close();
    }
    expect((await rpc(base, caller, 'tasks/get', { taskId })).result).toMatchObject({ status: 'completed', result: { isError: false } });
  });
});
