/**
 * `ctx.mcp` for node executors (RFC 0204 §A) through the conformance fixture `conformance-mcp-client`,
 * against the conformance suite's fake MCP server: every resolved value is compared with what the
 * fake recorded sending (its exchanges), never with something read from the host. Also the closed
 * port behind `conformance.down`, an unconfigured server, the server's JSON-RPC error carried
 * unaltered, the effect seam and the tenant's dispatch policy.
 */
import { NodeMcpError } from '@openwop-host/plugin-sdk';
import { createTestApp, TestApp } from '../support/test-app';
import { McpFakeServer, McpExchange } from '../fixtures/mcp/conformance/mcp-fake-server';
import { McpHostService } from '../../src/capabilities/tool-catalog';
import { runEvents, waitForStatus } from '../runs/run-kit';

const FIXTURE = 'conformance-mcp-client';

describe('ctx.mcp: MCP results unaltered for node executors (e2e)', () => {
  let t: TestApp;
  let fake: McpFakeServer;
  let runner: string;
  let admin: string;

  beforeAll(async () => {
    fake = new McpFakeServer();
    await fake.start();
    t = await createTestApp({
      env: { OPENWOP_TEST_SEAMS: 'true' },
      configFile: { tools: { mcpServers: [{ id: 'conformance', transport: 'http', url: fake.endpoint(), classification: {} }] } },
    });
    runner = await t.key({ scopes: ['runs:create', 'runs:read'] });
    admin = await t.key({ principal: 'operator', scopes: ['tools:manage', 'tools:read'] });
  });

  afterAll(async () => {
    await t?.close();
    await fake?.stop();
  });

  const runFixture = async (inputs: Record<string, unknown>) => {
    const created = await t.http('POST', '/v1/runs', { token: runner, body: { workflowId: FIXTURE, inputs } });
    expect(created.status).toBe(201);
    const runId = created.body.runId as string;
    const snap = await waitForStatus(t, runner, runId, ['completed', 'failed', 'cancelled']);
    const events = await runEvents(t, runner, runId);
    const node = (type: string) => events.find((e) => e.type === type && e.payload?.nodeId === 'mcp-client')?.payload as Record<string, any> | undefined; // eslint-disable-line @typescript-eslint/no-explicit-any
    return { runId, status: snap.status as string, result: node('node.completed')?.outputs?.result, error: node('node.failed')?.error as { code: string; message: string } | undefined };
  };
  const last = (pred: (x: McpExchange) => boolean) => [...fake.exchanges()].reverse().find(pred);
  const params = (x: McpExchange) => (x.params ?? {}) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

  it('is listed in the discovery fixtures while the seams serve it (v2 reads them beside mcp.client: true)', async () => {
    const doc = await t.http('GET', '/.well-known/openwop');
    expect(doc.body.fixtures).toContain('conformance-mcp-tool-roundtrip');
    expect(doc.body.fixtures).toContain(FIXTURE);
  });

  it('callTool resolves the server CallToolResult unaltered: _meta (the nonce, serverInfo) and resultType kept', async () => {
    const nonce = `n-${Date.now()}`;
    const out = await runFixture({ method: 'callTool', serverId: 'conformance', name: 'structured-echo', arguments: { nonce } });
    expect(out.status).toBe('completed');
    const sent = last((x) => x.method === 'tools/call' && params(x).arguments?.nonce === nonce);
    expect(sent).toBeDefined();
    expect(out.result).toEqual(sent?.result);
    expect(out.result._meta['dev.openwop.conformance/nonce']).toBe(nonce);
    expect(out.result._meta['io.modelcontextprotocol/serverInfo']).toEqual({ name: 'openwop-conformance-fake-mcp', version: '1.1.0' });
    // The official client's parsed result drops it: read from the wire.
    expect(out.result.resultType).toBe('complete');
    expect(out.result.structuredContent).toEqual({ n: 7, nonce });
    // One call, made as one of the node's effects (recorded in the run's invocation log).
    expect(fake.exchanges().filter((x) => x.method === 'tools/call' && params(x).arguments?.nonce === nonce)).toHaveLength(1);
    const effects = (await t.ds.query(`SELECT "provider_key" FROM "activity_invocation" WHERE "run_id" = $1`, [out.runId])) as Array<{ provider_key: string }>;
    expect(effects.map((e) => e.provider_key)).toEqual(['mcp:tools/call:conformance/structured-echo']);
  });

  it('callTool resolves (does not reject) a result with isError: true', async () => {
    const out = await runFixture({ method: 'callTool', serverId: 'conformance', name: 'always-error', arguments: {} });
    expect(out.status).toBe('completed');
    expect(out.result.isError).toBe(true);
    expect(out.result).toEqual(last((x) => x.method === 'tools/call' && params(x).name === 'always-error')?.result);
  });

  it('listTools resolves ONE page unaltered and forwards the cursor; the last page has no nextCursor', async () => {
    const first = await runFixture({ method: 'listTools', serverId: 'conformance' });
    expect(first.status).toBe('completed');
    const sent1 = last((x) => x.method === 'tools/list' && params(x).cursor === undefined);
    expect(first.result).toEqual(sent1?.result);
    expect(first.result.tools.map((x: { name: string }) => x.name)).toEqual(['echo', 'structured-echo', 'always-error']);
    expect(first.result.tools[1]).toEqual(fake.currentTools()[1]);
    expect(first.result).toMatchObject({ nextCursor: 'fake-page:3', ttlMs: 60_000, cacheScope: 'private', resultType: 'complete' });
    const second = await runFixture({ method: 'listTools', serverId: 'conformance', cursor: first.result.nextCursor });
    expect(second.status).toBe('completed');
    const sent2 = last((x) => x.method === 'tools/list' && params(x).cursor === 'fake-page:3');
    expect(sent2).toBeDefined();
    expect(second.result).toEqual(sent2?.result);
    expect(second.result.tools).toHaveLength(3);
    expect(second.result.nextCursor).toBeUndefined();
  });

  it('serverHealth: reachable with the DiscoverResult unaltered; the closed port of conformance.down unreachable; never a session state', async () => {
    const up = await runFixture({ method: 'serverHealth', serverId: 'conformance' });
    expect(up.status).toBe('completed');
    expect(up.result.state).toBe('reachable');
    expect(up.result.discover).toEqual(last((x) => x.method === 'server/discover')?.result);
    expect(up.result.discover.supportedVersions).toEqual([...fake.protocolVersions()]);
    const down = await runFixture({ method: 'serverHealth', serverId: 'conformance.down' });
    expect(down.status).toBe('completed');
    expect(down.result).toEqual({ state: 'unreachable' });
    expect(JSON.stringify([up.result, down.result])).not.toMatch(/"(dis)?connected"/);
  });

  it('a call to conformance.down rejects as a transport failure, not as an unknown server', async () => {
    const out = await runFixture({ method: 'callTool', serverId: 'conformance.down', name: 'echo', arguments: { text: 'x' } });
    expect(out.status).toBe('failed');
    expect(out.error?.code).toBe('mcp_unreachable');
  });

  it('an unconfigured serverId fails the node not_found', async () => {
    const calls = fake.invocations().length;
    for (const method of ['callTool', 'listTools', 'serverHealth']) {
      const out = await runFixture({ method, serverId: 'no-such-server', name: 'echo', arguments: { text: 'x' } });
      expect(out.status).toBe('failed');
      expect(out.error?.code).toBe('not_found');
    }
    expect(fake.invocations().length).toBe(calls);
  });

  it("the server's JSON-RPC error rejects, carried unaltered (code, message, data)", async () => {
    const out = await runFixture({ method: 'readResource', serverId: 'conformance', uri: 'file:///nothing' });
    expect(out.status).toBe('failed');
    expect(out.error?.code).toBe('mcp_error');
    const host = t.moduleRef.get(McpHostService);
    const cfg = await host.server('conformance', 'default');
    const rejected = await host.readResource(cfg, { tenant: 'default' }, 'file:///nothing', new AbortController().signal).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(rejected).toBeInstanceOf(NodeMcpError);
    expect((rejected as NodeMcpError).error).toEqual(last((x) => x.method === 'resources/read')?.error);
    // An unknown cursor: -32602 answered at HTTP 200.
    const badCursor = await host.listTools(cfg, { tenant: 'default' }, 'nope', new AbortController().signal).catch((e: unknown) => e);
    expect((badCursor as NodeMcpError).error).toEqual(last((x) => x.method === 'tools/list' && params(x).cursor === 'nope')?.error);
    expect((badCursor as NodeMcpError).error.code).toBe(-32602);
  });

  it('callTool runs MRTR itself: the question is the node\'s clarification, the retry echoes requestState, the node sees only the final result', async () => {
    const approver = await t.key({ principal: 'answerer', scopes: ['approvals:respond', 'runs:read'] });
    const created = await t.http('POST', '/v1/runs', { token: runner, body: { workflowId: FIXTURE, inputs: { method: 'callTool', serverId: 'conformance', name: 'needs_input', arguments: {} } } });
    expect(created.status).toBe(201);
    const runId = created.body.runId as string;
    expect((await waitForStatus(t, runner, runId, ['waiting-input', 'failed', 'completed'], 30_000)).status).toBe('waiting-input');
    const asked = last((x) => x.method === 'tools/call' && params(x).name === 'needs_input');
    expect((asked?.result as { resultType?: string }).resultType).toBe('input_required');
    const ok = await t.http('POST', `/v1/runs/${runId}/interrupts/mcp-client`, { token: approver, body: { resumeValue: { action: 'accept', content: { name: 'Ada' } } } });
    expect(ok.status).toBe(200);
    expect((await waitForStatus(t, runner, runId, ['completed', 'failed'], 30_000)).status).toBe('completed');
    const retry = last((x) => x.method === 'tools/call' && params(x).name === 'needs_input');
    expect(params(retry as McpExchange).requestState).toBe((asked?.result as { requestState: string }).requestState);
    const events = await runEvents(t, runner, runId);
    const completed = events.find((e) => e.type === 'node.completed' && e.payload?.nodeId === 'mcp-client')?.payload as { outputs: { result: { content: unknown } } } | undefined;
    const result = completed?.outputs.result;
    expect(result).toEqual(retry?.result);
    expect(result?.content).toEqual([{ type: 'text', text: 'hello Ada' }]);
    // The first round was read back from the invocation log when the node ran again: two calls in all.
    expect(fake.exchanges().filter((x) => x.method === 'tools/call' && params(x).name === 'needs_input')).toHaveLength(2);
  });

  it("callTool asks the tenant's dispatch policy first: a denied tier fails the node before the server is contacted", async () => {
    expect((await t.http('PUT', '/v1/tools/dispatch-policy', { token: admin, body: { tiers: { write: 'deny' } } })).status).toBe(200);
    try {
      const calls = fake.invocations().filter((x) => x.method === 'tools/call').length;
      const out = await runFixture({ method: 'callTool', serverId: 'conformance', name: 'echo', arguments: { text: 'denied' } });
      expect(out.status).toBe('failed');
      expect(out.error?.code).toBe('tool_dispatch_denied');
      expect(fake.invocations().filter((x) => x.method === 'tools/call').length).toBe(calls);
      // listTools is a read, not a tool call: not governed.
      expect((await runFixture({ method: 'listTools', serverId: 'conformance' })).status).toBe('completed');
    } finally {
      expect((await t.http('PUT', '/v1/tools/dispatch-policy', { token: admin, body: {} })).status).toBe(200);
    }
  });
});
