/**
 * The host's MCP client calls projected onto the OpenTelemetry MCP semantic conventions (RFC 0207
 * §D): a core.tool node calling an MCP tool yields a CLIENT span `tools/call <tool>` under the tool
 * call's span (itself under the node's), with the MCP and network attributes, the mapping's version
 * stamp, and nothing of the arguments, the result or a session; a CallToolResult with isError marks
 * it `tool_error`. Exported over OTLP/HTTP protobuf to a receiver in the test, against a
 * current-revision server built with the official 2.x SDK and the conformance suite's fake.
 */
import { flushTracing } from '../../src/platform/tracing/tracing';
import { MCP_SEMCONV_REF } from '../../src/capabilities/tool-catalog/mcp/mcp-semconv';
import { McpFakeServer } from '../fixtures/mcp/conformance/mcp-fake-server';
import { startCurrentMcpServer } from '../fixtures/mcp/current-http-server';
import { installChains, waitForStatus } from '../runs/run-kit';
import { OtlpReceiver, ReceivedSpan, startHttpOtlpReceiver } from '../support/otlp-receiver';
import { createTestApp, TestApp } from '../support/test-app';

const A = 123456789;
const B = 987654321;
const PURE = { safetyTier: 'pure', replayPolicy: 'deterministic', egress: 'none' };

const CHAINS = {
  'vendor.test.semconv.add': { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'mcp:cur.add', arguments: { a: A, b: B } } }] },
  'vendor.test.semconv.error': { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'mcp:fake.always-error', arguments: {} } }] },
};

const FORBIDDEN = ['mcp.session.id', 'gen_ai.tool.call.arguments', 'gen_ai.tool.call.result'];

describe('MCP client spans on the OpenTelemetry MCP semantic conventions (e2e)', () => {
  let receiver: OtlpReceiver;
  let current: Awaited<ReturnType<typeof startCurrentMcpServer>>;
  let fake: McpFakeServer;
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    receiver = await startHttpOtlpReceiver();
    current = await startCurrentMcpServer();
    fake = new McpFakeServer();
    await fake.start();
    t = await createTestApp({
      env: { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
      configFile: {
        tools: {
          mcpServers: [
            { id: 'cur', transport: 'http', url: current.url, classification: { add: PURE } },
            { id: 'fake', transport: 'http', url: fake.endpoint(), classification: { 'always-error': PURE } },
          ],
        },
      },
    });
    await installChains(t, 'default', 'vendor.test.semconv', CHAINS);
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'tools:read'] });
  });

  afterAll(async () => {
    await t?.close();
    await current?.close();
    await fake?.stop();
    await receiver?.close();
  });

  /** Runs a chain and answers its spans: the core.tool node's, the tool call's under it, and the MCP span under that. */
  async function runAndTrace(workflowId: string, status: string, mcpName: string) {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId } });
    expect(r.status).toBe(201);
    const runId = r.body.runId as string;
    expect((await waitForStatus(t, key, runId, ['completed', 'failed'], 30_000)).status).toBe(status);
    await flushTracing();
    const spans = await receiver.waitFor((s) => {
      const tool = s.find((x) => x.name === 'openwop.tool.call' && x.attributes['openwop.run_id'] === runId);
      return !!tool && s.some((x) => x.parentSpanId === tool.spanId && x.name === mcpName);
    });
    const node = spans.find((s) => s.name === 'openwop.node.core.tool' && s.attributes['openwop.run_id'] === runId)!;
    const tool = spans.find((s) => s.name === 'openwop.tool.call' && s.attributes['openwop.run_id'] === runId)!;
    // Opening the tool's session may list the server's tools first (its own tools/list span); one call.
    const under = spans.filter((s) => s.parentSpanId === tool.spanId);
    expect(under.every((s) => s.name === mcpName || s.name === 'tools/list')).toBe(true);
    const mcp = under.filter((s) => s.name === mcpName);
    expect(mcp).toHaveLength(1);
    return { spans, node, tool, mcp: mcp[0] };
  }

  function expectStamped(s: ReceivedSpan) {
    expect(s.attributes['openwop.otel.mcp_mapping_version']).toBe('0');
    expect(s.attributes['openwop.otel.mcp_semconv_ref']).toBe(MCP_SEMCONV_REF);
    expect(MCP_SEMCONV_REF).toMatch(/^open-telemetry\/semantic-conventions-genai@[0-9a-f]{40}$/);
    for (const k of FORBIDDEN) expect(Object.keys(s.attributes)).not.toContain(k);
  }

  it('puts a tools/call client span with the MCP attributes under the tool call, in the run’s trace, and nothing of the arguments or the result', async () => {
    const { node, tool, mcp } = await runAndTrace('vendor.test.semconv.add', 'completed', 'tools/call add');
    expect(tool.parentSpanId).toBe(node.spanId);
    expect(mcp.traceId).toBe(node.traceId);
    expect(mcp.kind).toBe(3); // client
    expect(mcp.attributes).toEqual(
      expect.objectContaining({
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'add',
        'gen_ai.operation.name': 'execute_tool',
        'mcp.protocol.version': '2026-07-28',
        'network.transport': 'tcp',
        'network.protocol.name': 'http',
        'server.address': '127.0.0.1',
        'server.port': Number(new URL(current.url).port),
      }),
    );
    expect(mcp.attributes['jsonrpc.request.id']).toMatch(/^[0-9]+$/);
    expect(Object.keys(mcp.attributes)).not.toContain('error.type');
    expect(mcp.status.code).toBe(0);
    expectStamped(mcp);
    // Neither the arguments nor the sum appear anywhere in the span.
    const text = JSON.stringify(mcp);
    for (const v of [A, B, A + B]) expect(text).not.toContain(String(v));
  });

  it('marks a CallToolResult with isError as error.type tool_error, status ERROR', async () => {
    const { mcp } = await runAndTrace('vendor.test.semconv.error', 'failed', 'tools/call always-error');
    expect(mcp.attributes).toEqual(expect.objectContaining({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'always-error', 'mcp.protocol.version': '2026-07-28', 'error.type': 'tool_error' }));
    // A tool error is a result, not a JSON-RPC error: no response status code.
    expect(Object.keys(mcp.attributes)).not.toContain('rpc.response.status_code');
    expect(mcp.status.code).toBe(2);
    expectStamped(mcp);
  });

  it('stamps every exported span that carries an mcp.* attribute (tools/list walks included)', async () => {
    await flushTracing();
    const projected = receiver.spans.filter((s) => Object.keys(s.attributes).some((k) => k.startsWith('mcp.')));
    expect(projected.some((s) => s.name === 'tools/list' && s.attributes['mcp.method.name'] === 'tools/list')).toBe(true);
    for (const s of projected) {
      expect(s.kind).toBe(3);
      expectStamped(s);
    }
    expect(receiver.refused).toEqual([]);
  });
});
