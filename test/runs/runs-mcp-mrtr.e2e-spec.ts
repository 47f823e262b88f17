/**
 * MRTR as a client (RFC 0153 §C.1) in runs and through the invoke seam, against the conformance
 * suite's fake MCP server: an `input_required` elicitation suspends the node on a clarification
 * interrupt, its answer goes back with the `requestState` echoed byte for byte, the first call is
 * never sent again, a cancel sends nothing and a replay re-issues nothing. Also the seam's revision
 * refusals and the `conformance-mcp-tool-roundtrip` fixture.
 */
import { createTestApp, TestApp } from '../support/test-app';
import { McpFakeServer } from '../fixtures/mcp/conformance/mcp-fake-server';
import { startEverythingServer } from '../fixtures/mcp/current-http-server';
import { installChains, runEvents, waitForStatus } from './run-kit';

describe('MCP client: MRTR in runs and the invoke seam (e2e)', () => {
  let t: TestApp;
  let fake: McpFakeServer;
  let everything: Awaited<ReturnType<typeof startEverythingServer>>;
  let key: string;
  let approver: string;

  const toolCalls = () => fake.invocations().filter((c) => c.method === 'tools/call');
  const invoke = (body: Record<string, unknown>) => t.http('POST', '/v1/host/sample/mcp/invoke', { token: key, body });

  beforeAll(async () => {
    fake = new McpFakeServer();
    await fake.start();
    everything = await startEverythingServer();
    t = await createTestApp({
      env: { OPENWOP_TEST_SEAMS: 'true' },
      configFile: {
        tools: {
          mcpServers: [
            // The id the conformance runner gives the fake: the MCP fixtures are served for it.
            { id: 'conformance', transport: 'http', url: fake.endpoint() },
            { id: 'everything', transport: 'http', url: everything.url },
          ],
        },
      },
    });
    key = await t.key({ scopes: ['tools:read', 'runs:create', 'runs:read', 'runs:cancel'] });
    approver = await t.key({ principal: 'answerer', scopes: ['approvals:respond', 'runs:read'] });
    await installChains(t, 'default', 'vendor.test.mcp-mrtr', {
      'vendor.test.mcp-ask': { nodes: [{ id: 'ask', typeId: 'core.tool', config: { toolId: 'mcp:conformance.needs_input' } }] },
      'vendor.test.mcp-loop': { nodes: [{ id: 'ask', typeId: 'core.tool', config: { toolId: 'mcp:conformance.needs_input_loop', arguments: { rounds: 2 } } }] },
    });
  });

  afterAll(async () => {
    await t?.close();
    await fake?.stop();
    await everything?.close();
  });

  it('advertises the client: v1 mcp with the revisions in date form (and the server mount, on by default), and mcpClient with an untrusted boundary', async () => {
    const disco = await t.http('GET', '/.well-known/openwop');
    expect(disco.body.mcp).toEqual({
      supported: true,
      serverUrls: ['/v1/host/openwop/mcp'],
      serverMount: { supported: true, transports: ['streamable-http'], samplingBridge: true, elicitationBridge: true },
      protocolVersions: ['2026-07-28', '2025-06-18'],
      preferredVersion: '2026-07-28',
      profiles: ['mcp-2026-07-28', 'mcp-2025-06-18-legacy'],
      features: ['server-discover', 'mrtr', 'cacheable-lists'],
    });
    expect(disco.body.mcpClient).toEqual({ supported: true, transports: ['stdio', 'streamable-http'], trustBoundary: 'untrusted' });
    expect(disco.body.fixtures).toContain('conformance-mcp-tool-roundtrip');
  });

  it('suspends a node on a clarification when the tool asks for input, and retries with the answer and the exact requestState', async () => {
    fake.reset();
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.mcp-ask' } });
    const waiting = await waitForStatus(t, key, r.body.runId, ['waiting-input', 'failed', 'completed'], 30_000);
    expect(waiting.status).toBe('waiting-input');
    expect(waiting.interrupt).toMatchObject({
      kind: 'clarification',
      nodeId: 'ask',
      title: 'What is your name?',
      data: { mcp: { inputRequestKey: 'who', mode: 'form', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }, serverId: 'conformance', tool: 'needs_input', protocolVersion: '2026-07-28' } },
    });
    expect(toolCalls()).toHaveLength(1);
    const issued = (fake.exchanges().find((x) => x.method === 'tools/call')?.result as { requestState: string }).requestState;

    // The answer must be an ElicitResult whose content satisfies the requested schema.
    const bad = await t.http('POST', `/v1/runs/${r.body.runId}/interrupts/ask`, { token: approver, body: { resumeValue: { action: 'accept', content: { name: 7 } } } });
    expect([bad.status, bad.body.error]).toEqual([400, 'validation_error']);
    const ok = await t.http('POST', `/v1/runs/${r.body.runId}/interrupts/ask`, { token: approver, body: { resumeValue: { action: 'accept', content: { name: 'Ada' } } } });
    expect(ok.status).toBe(200);
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed'], 30_000);
    expect(done.status).toBe('completed');
    expect(done.outputs.ask).toEqual({ result: [{ type: 'text', text: 'hello Ada' }], _mcp: { serverId: 'conformance', tool: 'needs_input', protocolVersion: '2026-07-28' } });

    // Two calls on the wire: the first was read back from the run's record, not sent again.
    const calls = toolCalls();
    expect(calls).toHaveLength(2);
    const retry = calls[1].params as { requestState?: string; inputResponses?: Record<string, unknown>; name?: string };
    expect(retry.name).toBe('needs_input');
    expect(retry.requestState).toBe(issued);
    expect(retry.inputResponses).toEqual({ who: { action: 'accept', content: { name: 'Ada' } } });
    for (const c of calls) expect(c.headers['mcp-protocol-version']).toBe('2026-07-28');

    const events = await runEvents(t, key, r.body.runId);
    const types = events.map((e) => e.type);
    expect(types.filter((x) => x === 'node.suspended')).toHaveLength(1);
    expect(events.find((e) => e.type === 'node.suspended')?.payload).toMatchObject({ kind: 'clarification' });
    const closed = events.filter((e) => e.type === 'tool.session.closed').map((e) => e.payload);
    expect(closed).toEqual([expect.objectContaining({ outcome: 'cancelled', suspended: true }), expect.objectContaining({ outcome: 'completed' })]);
    // Content-free bracket: the answer and the server's state stay out of the call events.
    expect(JSON.stringify(events.filter((e) => e.type.startsWith('agent.') || e.type.startsWith('tool.')))).not.toMatch(/Ada|mrtr:needs_input/);

    // A replay performs no effect: nothing more reaches the server.
    const fork = await t.http('POST', `/v1/runs/${r.body.runId}:fork`, { token: key, body: { mode: 'replay' } });
    expect(fork.status).toBe(201);
    await waitForStatus(t, key, fork.body.runId, ['completed', 'failed'], 30_000);
    expect(toolCalls()).toHaveLength(2);
  });

  it('sends nothing when the run is cancelled while the tool waits for input', async () => {
    fake.reset();
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.mcp-ask' } });
    await waitForStatus(t, key, r.body.runId, ['waiting-input'], 30_000);
    expect((await t.http('POST', `/v1/runs/${r.body.runId}/cancel`, { token: key, body: {} })).status).toBeLessThan(300);
    await waitForStatus(t, key, r.body.runId, ['cancelled'], 30_000);
    await new Promise((res) => setTimeout(res, 300));
    expect(toolCalls()).toHaveLength(1);
  });

  it('answers decline when the interrupt is rejected', async () => {
    fake.reset();
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.mcp-ask' } });
    const waiting = await waitForStatus(t, key, r.body.runId, ['waiting-input'], 30_000);
    const denied = await t.http('POST', `/v1/approvals/${waiting.interrupt.interruptId}/deny`, { token: approver, body: {} });
    expect(denied.status).toBe(200);
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed'], 30_000);
    const calls = toolCalls();
    expect(calls).toHaveLength(2);
    expect((calls[1].params as { inputResponses?: unknown }).inputResponses).toEqual({ who: { action: 'decline' } });
    // The fake asks again after a decline: the step's one round is spent, so it fails.
    expect([done.status, done.error?.code]).toEqual(['failed', 'mcp_mrtr_rounds_exceeded']);
  });

  it('bounds the rounds of a run step: a tool asking again after the answered round fails the node', async () => {
    fake.reset();
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.mcp-loop' } });
    await waitForStatus(t, key, r.body.runId, ['waiting-input'], 30_000);
    await t.http('POST', `/v1/runs/${r.body.runId}/interrupts/ask`, { token: approver, body: { resumeValue: { action: 'accept', content: { name: 'Ada' } } } });
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed'], 30_000);
    expect([done.status, done.error?.code]).toEqual(['failed', 'mcp_mrtr_rounds_exceeded']);
    expect(toolCalls()).toHaveLength(2);
  });

  it('the invoke seam: negotiates 2026-07-28, answers an elicitation, and echoes the requestState', async () => {
    fake.reset();
    const listed = await invoke({ serverUrl: fake.endpoint() });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ negotiatedVersion: '2026-07-28' });
    for (const c of fake.invocations()) expect(c.headers['mcp-protocol-version']).toBe('2026-07-28');

    fake.reset();
    const res = await invoke({ serverUrl: fake.endpoint(), tool: 'needs_input', clientCapabilities: { elicitation: {} }, elicitationAnswer: { name: 'Ada' } });
    expect(res.status).toBe(200);
    expect(res.body.mrtr).toMatchObject({ inputRequiredSeen: true, retried: true, requestStateEchoed: true, result: { content: [{ type: 'text', text: 'hello Ada' }] } });
    const calls = toolCalls();
    expect(calls).toHaveLength(2);
    expect((calls[1].params as { requestState: string }).requestState).toBe((fake.exchanges().find((x) => x.method === 'tools/call')?.result as { requestState: string }).requestState);
  });

  it('the invoke seam: refuses an unsupported revision before any call, bounds MRTR rounds, and checks its input', async () => {
    fake.reset();
    const old = await invoke({ serverUrl: fake.endpoint(), requestVersion: '1999-01-01' });
    expect(old.status).toBe(400);
    expect(old.body).toEqual({
      error: 'interop_version_unsupported',
      message: expect.any(String),
      details: { protocol: 'mcp', requested: '1999-01-01', supported: ['2026-07-28', '2025-06-18'], retriable: false, reason: 'unsupported' },
    });
    expect(fake.invocations()).toEqual([]);
    // A revision the caller asked for is not the server's standing: it is neither refused nor audited.
    const operator = await t.key({ scopes: ['tools:manage'] });
    const servers = await t.http('GET', '/v1/mcp/servers', { token: operator });
    expect(servers.body.servers.find((s: Record<string, unknown>) => s.serverId === 'conformance')).toMatchObject({ negotiatedVersion: '2026-07-28' });
    expect(servers.body.servers.find((s: Record<string, unknown>) => s.serverId === 'conformance').refused).toBeUndefined();

    const loop = await invoke({ serverUrl: fake.endpoint(), tool: 'needs_input_loop', arguments: { rounds: 5 }, clientCapabilities: { elicitation: {} }, elicitationAnswer: { name: 'x' } });
    expect([loop.status, loop.body.error]).toEqual([422, 'mcp_mrtr_rounds_exceeded']);
    expect(toolCalls()).toHaveLength(5);

    const undeclared = await invoke({ serverUrl: fake.endpoint(), tool: 'needs_input' });
    expect([undeclared.status, undeclared.body.error, undeclared.body.details]).toEqual([422, 'mcp_capability_required', { requiredCapabilities: ['elicitation'] }]);

    expect((await invoke({ serverUrl: 'http://127.0.0.1:1/elsewhere' })).status).toBe(422);
    const malformed = await invoke({ serverUrl: fake.endpoint(), requestVersion: 'latest' });
    expect([malformed.status, malformed.body.error]).toEqual([400, 'validation_error']);
    expect((await t.http('POST', '/v1/host/sample/mcp/invoke', { body: { serverUrl: fake.endpoint() } })).status).toBe(401);
  });

  it('the invoke seam: a legacy server is reached by an explicit downgrade, and never for an unauthenticated exchange', async () => {
    const down = await invoke({ serverUrl: everything.url, tool: 'echo', arguments: { message: 'hi' } });
    expect(down.status).toBe(200);
    expect(down.body.negotiatedVersion).toBe('2025-06-18');
    const asked = await invoke({ serverUrl: everything.url, requestVersion: '2025-06-18' });
    expect(asked.body).toEqual({ negotiatedVersion: '2025-06-18' });
    const anon = await invoke({ serverUrl: everything.url, authenticated: false });
    expect(anon.status).toBe(400);
    expect(anon.body.details).toMatchObject({ protocol: 'mcp', requested: '2026-07-28', reason: 'unauthenticated', retriable: false });
  });

  it('runs the conformance-mcp-tool-roundtrip fixture: tools/call echo on the configured server, visible in the run events', async () => {
    fake.reset();
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance-mcp-tool-roundtrip', inputs: { text: 'roundtrip-probe' } } });
    expect(r.status).toBe(201);
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed'], 30_000);
    expect(done.status).toBe('completed');
    expect(done.outputs.invoke.result).toEqual([{ type: 'text', text: 'roundtrip-probe' }]);
    const call = toolCalls()[0];
    expect(call.params).toMatchObject({ name: 'echo', arguments: { text: 'roundtrip-probe' } });
    const events = await t.http('GET', `/v1/runs/${r.body.runId}/events`, { token: key, headers: { accept: 'application/json' } });
    expect(Array.isArray(events.body.events)).toBe(true);
    expect(JSON.stringify(events.body).toLowerCase()).toContain('echo');
  });
});
