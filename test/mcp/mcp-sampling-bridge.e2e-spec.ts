/**
 * The legacy sampling bridge of the host's MCP server mount (RFC 0020 §A point 3,
 * `serverMount.samplingBridge`), driven by the official MCP SDK's 1.x client over the 2025-06-18
 * handshake: an inbound `sampling/createMessage` runs the caller's sampling handler chain (the chain
 * is the "model": its steps compute the reply) as a durable run and answers its
 * CreateMessageResult; `modelPreferences.hints` pick the chain; a chain that fails, or computes no
 * reply, answers -32603 naming the run; bad params are refused before any run; the current
 * revision does not serve the method.
 */
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains } from '../runs/run-kit';

const MOUNT = '/v1/host/openwop/mcp';

/** A model computed by the chain: a step shapes the reply from the request, the handler answers it. */
const ECHO = {
  nodes: [
    { id: 'think', typeId: 'core.noop', config: { text: 'You said "{{inputs.prompt}}" (system: {{inputs.systemPrompt}}; at most {{inputs.maxTokens}} tokens)' } },
    { id: 'reply', typeId: 'core.openwop.mcp.handle-sampling', config: { model: 'openwop-echo-model' } },
  ],
  edges: [{ from: 'think', to: 'reply' }],
};
/** The reply named by the handler's own config, from the request's messages. */
const COUNT = {
  nodes: [{ id: 'reply', typeId: 'core.openwop.mcp.handle-sampling', config: { model: 'openwop-counter', reply: 'messages: {{inputs.messages}}' } }],
};
const BROKEN = {
  nodes: [
    { id: 'boom', typeId: 'core.fail', config: { code: 'model_unavailable', message: 'The model is down.' } },
    { id: 'reply', typeId: 'core.openwop.mcp.handle-sampling', config: { model: 'openwop-broken' } },
  ],
  edges: [{ from: 'boom', to: 'reply' }],
};
/** A person is the model: the question is the prompt, the answer the reply. */
const HUMAN = {
  nodes: [
    { id: 'ask', typeId: 'core.clarification', config: { title: '{{inputs.prompt}}', questions: [{ id: 'reply', question: 'Your reply?' }] } },
    { id: 'reply', typeId: 'core.openwop.mcp.handle-sampling', config: { model: 'openwop-human', reply: '{{nodes.ask.answers.reply}}' } },
  ],
  edges: [{ from: 'ask', to: 'reply' }],
};
const SILENT = { nodes: [{ id: 'reply', typeId: 'core.openwop.mcp.handle-sampling', config: { model: 'openwop-silent' } }] };

async function legacyClient(base: string, key: string): Promise<LegacyClient> {
  const client = new LegacyClient({ name: 'sampling-test', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(`${base}${MOUNT}`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return client;
}

function sample(text: string, hint?: string): Record<string, unknown> {
  return {
    messages: [
      { role: 'user', content: { type: 'text', text: 'earlier' } },
      { role: 'assistant', content: { type: 'text', text: 'noted' } },
      { role: 'user', content: { type: 'text', text } },
    ],
    systemPrompt: 'be brief',
    maxTokens: 64,
    ...(hint ? { modelPreferences: { hints: [{ name: hint }] } } : {}),
  };
}

describe('MCP sampling bridge (e2e, official 1.x client)', () => {
  let t: TestApp;
  let base: string;
  let key: string;
  let answerer: string;
  let client: LegacyClient;

  beforeAll(async () => {
    t = await createTestApp();
    await installChains(t, 'default', 'vendor.test.sampling', { 'vendor.test.a-echo': ECHO, 'vendor.test.count': COUNT, 'vendor.test.broken': BROKEN, 'vendor.test.silent': SILENT, 'vendor.test.human': HUMAN });
    key = await t.key({ principal: 'agent', scopes: ['tools:read', 'runs:create', 'runs:read'] });
    answerer = await t.key({ principal: 'operator', scopes: ['runs:read', 'approvals:respond'] });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.getHttpServer().address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    client = await legacyClient(base, key);
  }, 120_000);

  afterAll(async () => {
    await client?.close();
    await t?.close();
  });

  it('advertises the bridge', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.mcp.serverMount).toMatchObject({ supported: true, samplingBridge: true });
  });

  it('answers the CreateMessageResult the chain computed, from a durable run marked mcp', async () => {
    const res = await client.request({ method: 'sampling/createMessage', params: sample('what is 2+2?', 'echo') }, CreateMessageResultSchema);
    expect(res).toMatchObject({ role: 'assistant', model: 'openwop-echo-model', stopReason: 'endTurn', content: { type: 'text', text: 'You said "what is 2+2?" (system: be brief; at most 64 tokens)' } });
    const runId = (res._meta as Record<string, string>)['io.openwop/runId'];
    const [run] = await t.ds.query(`SELECT "metadata", "status", "workflow_id" FROM "run" WHERE "id" = $1`, [runId]);
    expect(run).toMatchObject({ status: 'completed', workflow_id: 'vendor.test.a-echo', metadata: { transport: 'mcp', trustBoundary: 'untrusted' } });
    const events = await t.http('GET', `/v1/runs/${runId}/events`, { token: key, headers: { accept: 'application/json' } });
    expect(events.body.events.find((e: { type: string }) => e.type === 'run.started').payload.transport).toBe('mcp');
    // A different request, a different reply: nothing is canned.
    const other = await client.request({ method: 'sampling/createMessage', params: sample('and 3+3?', 'echo') }, CreateMessageResultSchema);
    expect(other.content).toEqual({ type: 'text', text: 'You said "and 3+3?" (system: be brief; at most 64 tokens)' });
  });

  it('picks the chain by the caller\'s model hints, else the first by id', async () => {
    const counted = await client.request({ method: 'sampling/createMessage', params: sample('hi', 'counter') }, CreateMessageResultSchema);
    expect(counted.model).toBe('openwop-counter');
    expect((counted.content as { text: string }).text).toContain('"text":"earlier"');
    const first = await client.request({ method: 'sampling/createMessage', params: sample('hi') }, CreateMessageResultSchema);
    expect(first.model).toBe('openwop-echo-model');
  });

  it('a chain that fails answers -32603 with its run and error; one that computes no reply too', async () => {
    const broken = await client.request({ method: 'sampling/createMessage', params: sample('hi', 'broken') }, CreateMessageResultSchema).then(() => undefined, (e: unknown) => e);
    expect(broken).toBeInstanceOf(McpError);
    expect((broken as McpError).code).toBe(-32603);
    const data = (broken as McpError).data as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(data).toMatchObject({ 'io.openwop/runStatus': 'failed', workflowId: 'vendor.test.broken', error: { code: 'model_unavailable' } });
    expect((await t.http('GET', `/v1/runs/${data['io.openwop/runId']}`, { token: key })).body.status).toBe('failed');
    const silent = await client.request({ method: 'sampling/createMessage', params: sample('hi', 'silent') }, CreateMessageResultSchema).then(() => undefined, (e: unknown) => e);
    expect((silent as McpError).code).toBe(-32603);
    expect((silent as McpError).data).toMatchObject({ error: { code: 'sampling_no_reply' } });
  });

  it('waits while a person answers: the reply is what they answered in the inbox', async () => {
    const pending = client.request({ method: 'sampling/createMessage', params: sample('Capital of France?', 'human') }, CreateMessageResultSchema);
    let runId: string | undefined;
    for (let i = 0; i < 200 && !runId; i++) {
      const rows = await t.ds.query(`SELECT "id" FROM "run" WHERE "workflow_id" = 'vendor.test.human' AND "status" = 'waiting-input'`);
      runId = rows[0]?.id;
      if (!runId) await new Promise((r) => setTimeout(r, 100));
    }
    expect(runId).toBeDefined();
    const r = await t.http('POST', `/v1/runs/${runId}/interrupts/ask`, { token: answerer, body: { resumeValue: { answers: { reply: 'Paris.' } } } });
    expect(r.status).toBe(200);
    const res = await pending;
    expect(res).toMatchObject({ role: 'assistant', model: 'openwop-human', content: { type: 'text', text: 'Paris.' } });
    expect((res._meta as Record<string, string>)['io.openwop/runId']).toBe(runId);
  });

  it('refuses malformed params with -32602 before any run exists', async () => {
    const before = (await t.http('GET', '/v1/runs?limit=100', { token: key })).body.runs.length;
    const bad = await client.request({ method: 'sampling/createMessage', params: { messages: [{ role: 'system', content: 'x' }] } }, CreateMessageResultSchema).then(() => undefined, (e: unknown) => e);
    expect((bad as McpError).code).toBe(-32602);
    expect(((bad as McpError).data as { violations: string[] }).violations).toEqual(expect.arrayContaining([expect.stringContaining('role'), expect.stringContaining('maxTokens')]));
    expect((await t.http('GET', '/v1/runs?limit=100', { token: key })).body.runs.length).toBe(before);
  });

  it('is not served under the current revision (-32601, 404)', async () => {
    const res = await fetch(`${base}${MOUNT}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${key}`, 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'sampling/createMessage' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sampling/createMessage', params: { ...sample('hi'), _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } }),
    });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32601);
  });
});
