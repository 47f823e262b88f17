/**
 * OpenTelemetry traces end to end: a request with a `traceparent`, over REST and over gRPC, yields
 * the request's server span, the run's `openwop.run`, its `openwop.node.<typeId>` spans and the tool
 * call's span in ONE trace with the right parents, exported over OTLP to a receiver in the test; the
 * MCP server the tool calls gets the MCP client span (`tools/call <tool>`, under the tool call's) as its
 * `traceparent`.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { flushTracing, tracingEnabled } from '../../src/platform/tracing/tracing';
import { startTracedMcpServer } from '../fixtures/mcp/traced-http-fixture';
import { createGrpcTestApp, GrpcTestApp, metadata } from '../grpc/grpc-kit';
import { installChains, runEvents, waitForStatus } from '../runs/run-kit';
import { ReceivedSpan, startGrpcOtlpReceiver, startHttpOtlpReceiver, OtlpReceiver } from '../support/otlp-receiver';
import { createTestApp, TestApp } from '../support/test-app';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const SECRET_INPUT = 'input-value-that-must-not-be-exported';

const CHAINS = {
  'vendor.test.traced': {
    nodes: [
      { id: 'prep', typeId: 'core.noop', config: { word: '{{inputs.secret}}' } },
      { id: 'call', typeId: 'core.tool', config: { toolId: 'mcp:remote.lookup', arguments: { q: '{{nodes.prep.word}}' } } },
    ],
    edges: [{ from: 'prep', to: 'call' }],
  },
  'vendor.test.traced.gated': {
    nodes: [
      { id: 'gate', typeId: 'core.approval', config: { title: 'Go on?' } },
      { id: 'after', typeId: 'core.noop', config: {} },
    ],
    edges: [{ from: 'gate', to: 'after' }],
  },
};

function one(spans: ReceivedSpan[], pred: (s: ReceivedSpan) => boolean, what: string): ReceivedSpan {
  const found = spans.filter(pred);
  if (found.length !== 1) throw new Error(`expected one ${what}, found ${found.length}: ${JSON.stringify(spans.map((s) => [s.name, s.spanId, s.parentSpanId]))}`);
  return found[0];
}

/** The spans of one run's trace, checked: request -> openwop.run -> nodes -> tool call. */
function expectRunTree(spans: ReceivedSpan[], runId: string, server: ReceivedSpan) {
  const inTrace = spans.filter((s) => s.traceId === TRACE_ID);
  const run = one(inTrace, (s) => s.name === 'openwop.run' && s.attributes['openwop.run_id'] === runId, 'openwop.run span');
  expect(run.parentSpanId).toBe(server.spanId);
  expect(run.attributes).toEqual(expect.objectContaining({ 'openwop.workflow_id': 'vendor.test.traced', 'openwop.tenant_id': 'default', 'openwop.run_status': 'completed', 'openwop.run.resumed': false }));
  const prep = one(inTrace, (s) => s.name === 'openwop.node.core.noop' && s.attributes['openwop.run_id'] === runId, 'core.noop node span');
  const call = one(inTrace, (s) => s.name === 'openwop.node.core.tool' && s.attributes['openwop.run_id'] === runId, 'core.tool node span');
  for (const n of [prep, call]) expect(n.parentSpanId).toBe(run.spanId);
  expect(prep.attributes).toEqual(expect.objectContaining({ 'openwop.node_id': 'prep', 'openwop.node_type': 'core.noop', 'openwop.node_attempt': 0, 'openwop.node.outcome': 'completed' }));
  expect(call.attributes).toEqual(expect.objectContaining({ 'openwop.node_id': 'call', 'openwop.node_type': 'core.tool' }));
  const tool = one(inTrace, (s) => s.name === 'openwop.tool.call' && s.attributes['openwop.run_id'] === runId, 'tool call span');
  expect(tool.parentSpanId).toBe(call.spanId);
  expect(tool.kind).toBe(3); // client: the call leaves the host
  expect(tool.attributes).toEqual(expect.objectContaining({ 'openwop.tool_id': 'mcp:remote.lookup', 'openwop.tool.source': 'mcp', 'openwop.node_id': 'call' }));
  expect(tool.status.code).toBe(0);
  // The MCP request's own client span (the OpenTelemetry MCP conventions) sits under the tool call.
  const mcp = one(inTrace, (s) => s.name === 'tools/call lookup' && s.parentSpanId === tool.spanId, 'MCP tools/call span');
  expect([mcp.kind, mcp.attributes['mcp.method.name'], mcp.attributes['gen_ai.tool.name']]).toEqual([3, 'tools/call', 'lookup']);
  // Identifiers only: the run's inputs (which flow into the node config and the tool arguments) are nowhere.
  expect(JSON.stringify(inTrace)).not.toContain(SECRET_INPUT);
  return { run, tool, mcp };
}

const PETSTORE = path.resolve(__dirname, '../../plugins/openapi-tools/test/fixtures/petstore.json');

describe('tracing over REST, exported with OTLP/HTTP protobuf', () => {
  let receiver: OtlpReceiver;
  let mcp: Awaited<ReturnType<typeof startTracedMcpServer>>;
  let api: http.Server;
  const apiHits: Array<{ url?: string; traceparent?: string }> = [];
  let t: TestApp;

  beforeAll(async () => {
    receiver = await startHttpOtlpReceiver();
    mcp = await startTracedMcpServer();
    api = http.createServer((req, res) => {
      apiHits.push({ url: req.url, traceparent: req.headers.traceparent as string | undefined });
      res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    t = await createTestApp({
      env: {
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SERVICE_NAME: 'openwop-host-under-test',
        OPENWOP_PLUGINS: './plugins/openapi-tools/src/index.ts',
        OPENWOP_PLUGINS_STRICT: 'true',
      },
      configFile: {
        tools: { mcpServers: [{ id: 'remote', transport: 'http', url: mcp.url }] },
        plugins: { 'openwop.openapi-tools': { vendor: 'acme', documents: [{ id: 'pets', path: PETSTORE, baseUrl: `http://127.0.0.1:${(api.address() as AddressInfo).port}/api`, tenants: ['default'] }] } },
      },
    });
    await installChains(t, 'default', 'vendor.test.traced', {
      ...CHAINS,
      'vendor.test.traced.http': { nodes: [{ id: 'pets', typeId: 'core.tool', config: { toolId: 'x-host-acme-pets.listPets', arguments: {} } }] },
    });
  });

  afterAll(async () => {
    await t?.close();
    await mcp?.close();
    await new Promise<void>((r) => (api ? api.close(() => r()) : r()));
    await receiver?.close();
  });

  it('passes the tool call’s span to an HTTP API called through a plugin', async () => {
    const key = await t.key({ scopes: ['runs:create', 'runs:read', 'tools:read'] });
    const traceId = 'c'.repeat(31) + 'd';
    const r = await t.http('POST', '/v1/runs', { token: key, headers: { traceparent: `00-${traceId}-${CALLER_SPAN}-01` }, body: { workflowId: 'vendor.test.traced.http' } });
    const runId = r.body.runId as string;
    const done = await waitForStatus(t, key, runId, ['completed', 'failed'], 30_000);
    expect([done.status, done.error]).toEqual(['completed', undefined]);
    await flushTracing();
    const spans = await receiver.waitFor((s) => s.some((x) => x.name === 'openwop.tool.call' && x.attributes['openwop.run_id'] === runId));
    const tool = one(spans, (s) => s.name === 'openwop.tool.call' && s.attributes['openwop.run_id'] === runId, 'tool call span');
    expect([tool.traceId, tool.kind, tool.attributes['openwop.tool.source']]).toEqual([traceId, 1, 'host-extension']);
    expect(apiHits.map((h) => h.traceparent)).toEqual([`00-${traceId}-${tool.spanId}-01`]);
  });

  it('puts the request, the run, its nodes and the tool call in the caller’s trace, and passes it to the MCP server', async () => {
    expect(tracingEnabled()).toBe(true);
    const key = await t.key({ scopes: ['runs:create', 'runs:read', 'tools:read'] });
    const r = await t.http('POST', '/v1/runs', { token: key, headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`, tracestate: 'vendor=opaque' }, body: { workflowId: 'vendor.test.traced', inputs: { secret: SECRET_INPUT } } });
    expect(r.status).toBe(201);
    const runId = r.body.runId as string;
    expect((await waitForStatus(t, key, runId, ['completed', 'failed'], 30_000)).status).toBe('completed');
    // The run row keeps the creating request's context (its span), never shown on the wire.
    const [row] = await t.ds.query(`SELECT "trace_parent", "trace_state" FROM "run" WHERE "id" = $1`, [runId]);
    expect(row.trace_parent).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
    expect(row.trace_state).toBe('vendor=opaque');
    expect(JSON.stringify((await t.http('GET', `/v1/runs/${runId}`, { token: key })).body)).not.toContain(TRACE_ID);

    await flushTracing();
    const spans = await receiver.waitFor((s) => s.some((x) => x.name === 'openwop.tool.call' && x.attributes['openwop.run_id'] === runId));
    const server = one(spans, (s) => s.traceId === TRACE_ID && s.name === 'POST /v1/runs', 'request span');
    expect(server.parentSpanId).toBe(CALLER_SPAN);
    expect(server.kind).toBe(2);
    expect(server.attributes).toEqual(expect.objectContaining({ 'http.request.method': 'POST', 'http.route': '/v1/runs', 'http.response.status_code': 201 }));
    expect(server.resource['service.name']).toBe('openwop-host-under-test');
    expect(row.trace_parent).toBe(`00-${TRACE_ID}-${server.spanId}-01`);
    const { mcp: mcpSpan } = expectRunTree(spans, runId, server);
    if (process.env.PRINT_SPAN_TREE) {
      const inTrace = spans.filter((s) => s.traceId === TRACE_ID);
      const print = (id: string, depth: number): string[] => inTrace.filter((s) => s.parentSpanId === id).flatMap((s) => [`${'  '.repeat(depth)}${s.name} ${s.durationMs.toFixed(1)}ms ${JSON.stringify(s.attributes)}`, ...print(s.spanId, depth + 1)]);
      process.stdout.write(`${print(CALLER_SPAN, 0).join('\n')}\n`);
    }

    // The MCP server saw the MCP client span as the parent of its tools/call request.
    const calls = mcp.seen.filter((s) => s.method === 'tools/call');
    expect(calls.map((c) => c.traceparent)).toEqual([`00-${TRACE_ID}-${mcpSpan.spanId}-01`]);
    expect(receiver.refused).toEqual([]);
  });

  it('keeps a run resumed after an approval gate in the creating request’s trace', async () => {
    const key = await t.key({ scopes: ['runs:create', 'runs:read'] });
    const approver = await t.key({ principal: 'approver', scopes: ['approvals:respond', 'runs:read'] });
    const traceId = 'a'.repeat(31) + 'b';
    const r = await t.http('POST', '/v1/runs', { token: key, headers: { traceparent: `00-${traceId}-${CALLER_SPAN}-01` }, body: { workflowId: 'vendor.test.traced.gated' } });
    const runId = r.body.runId as string;
    await waitForStatus(t, key, runId, ['waiting-approval']);
    const gate = (await runEvents(t, key, runId)).find((e) => e.type === 'node.suspended')!.payload.interruptId as string;
    expect((await t.http('POST', `/v1/approvals/${gate}/grant`, { token: approver, body: {} })).status).toBeLessThan(300);
    expect((await waitForStatus(t, key, runId, ['completed', 'failed'])).status).toBe('completed');
    await flushTracing();
    const spans = await receiver.waitFor((s) => s.filter((x) => x.name === 'openwop.run' && x.attributes['openwop.run_id'] === runId).length === 2);
    const server = one(spans, (s) => s.traceId === traceId && s.name === 'POST /v1/runs', 'request span');
    const runs = spans.filter((s) => s.name === 'openwop.run' && s.attributes['openwop.run_id'] === runId);
    expect(runs.map((s) => [s.traceId, s.parentSpanId, s.attributes['openwop.run.resumed'], s.attributes['openwop.run_status']])).toEqual([
      [traceId, server.spanId, false, 'waiting-approval'],
      [traceId, server.spanId, true, 'completed'],
    ]);
    // Each claim's node spans sit under its own run span.
    const gateSpans = spans.filter((s) => s.name === 'openwop.node.core.approval' && s.attributes['openwop.run_id'] === runId);
    expect(gateSpans.map((s) => [s.parentSpanId, s.attributes['openwop.node.outcome']])).toEqual([
      [runs[0].spanId, 'suspended'],
      [runs[1].spanId, 'completed'],
    ]);
    expect(one(spans, (s) => s.name === 'openwop.node.core.noop' && s.attributes['openwop.run_id'] === runId, 'after node').parentSpanId).toBe(runs[1].spanId);
  });

  it('starts a new trace for a request without a traceparent, or with an invalid one', async () => {
    const key = await t.key({ scopes: ['runs:read'] });
    const cases: Array<Record<string, string>> = [{}, { traceparent: `00-${'0'.repeat(32)}-${CALLER_SPAN}-01` }];
    for (const headers of cases) {
      const before = receiver.spans.length;
      expect((await t.http('GET', '/v1/runs?limit=1', { token: key, headers })).status).toBe(200);
      await flushTracing();
      const [span] = (await receiver.waitFor((s) => s.slice(before).some((x) => x.name === 'GET /v1/runs'))).slice(before).filter((x) => x.name === 'GET /v1/runs');
      expect(span.parentSpanId).toBe('');
      expect(span.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(span.traceId).not.toBe(TRACE_ID);
    }
  });

  it('advertises its export protocols in discovery while tracing is on', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.observability).toEqual({ otel: { exportProtocols: ['http/json', 'http/protobuf'], signals: ['traces'], propagation: ['tracecontext'] } });
  });
});

describe('tracing over gRPC, exported with OTLP/gRPC', () => {
  let receiver: OtlpReceiver;
  let mcp: Awaited<ReturnType<typeof startTracedMcpServer>>;
  let g: GrpcTestApp;

  beforeAll(async () => {
    receiver = await startGrpcOtlpReceiver();
    mcp = await startTracedMcpServer();
    g = await createGrpcTestApp({
      env: { OPENWOP_TRACING: 'true', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
      configFile: { tools: { mcpServers: [{ id: 'remote', transport: 'http', url: mcp.url }] } },
    });
    await installChains(g.t, 'default', 'vendor.test.traced', CHAINS);
  });

  afterAll(async () => {
    await g?.close();
    await mcp?.close();
    await receiver?.close();
  });

  it('puts the CreateRun call, the run, its nodes and the tool call in the caller’s trace', async () => {
    const key = await g.t.key({ scopes: ['runs:create', 'runs:read', 'tools:read'] });
    const created = await g.engine.call('CreateRun', { workflowId: 'vendor.test.traced', inputs: { secret: SECRET_INPUT } }, metadata(key, { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` }));
    if (!created.ok) throw new Error(JSON.stringify(created.error));
    const runId = created.body.runId as string;
    expect((await waitForStatus(g.t, key, runId, ['completed', 'failed'], 30_000)).status).toBe('completed');
    await flushTracing();
    const spans = await receiver.waitFor((s) => s.some((x) => x.name === 'openwop.tool.call' && x.attributes['openwop.run_id'] === runId));
    expect(spans.every((s) => s.via === 'grpc')).toBe(true);
    const server = one(spans, (s) => s.traceId === TRACE_ID && s.name === 'openwop.v1.Engine/CreateRun', 'gRPC call span');
    expect(server.parentSpanId).toBe(CALLER_SPAN);
    expect(server.kind).toBe(2);
    expect(server.attributes).toEqual(expect.objectContaining({ 'rpc.system': 'grpc', 'rpc.service': 'openwop.v1.Engine', 'rpc.method': 'CreateRun', 'rpc.grpc.status_code': 0 }));
    const { mcp: mcpSpan } = expectRunTree(spans, runId, server);
    expect(mcp.seen.filter((s) => s.method === 'tools/call').map((c) => c.traceparent)).toEqual([`00-${TRACE_ID}-${mcpSpan.spanId}-01`]);
  });

  it('advertises gRPC among its export protocols when it exports over gRPC', async () => {
    const d = await g.t.http('GET', '/.well-known/openwop');
    expect(d.body.observability.otel.exportProtocols).toEqual(['grpc', 'http/json', 'http/protobuf']);
  });
});
