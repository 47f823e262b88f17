/**
 * Metrics pushed over OTLP: with `OTEL_METRICS_EXPORTER=otlp` the host's metrics reach an OTLP
 * receiver started by the test (over HTTP/protobuf, HTTP/JSON and gRPC), with the names and attributes of
 * spec/v1/observability.md for runs, nodes and tool calls and the host's own names for the rest, and
 * a run moves them; discovery says so. Without it, nothing is sent (and nothing is advertised).
 */
import { MetricsService } from '../../src/platform/metrics/metrics.service';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { SPEC_METRIC_NAMES } from '../../src/platform/metrics/spec-metric-names';
import { startTracedMcpServer } from '../fixtures/mcp/traced-http-fixture';
import { installChains, waitForStatus } from '../runs/run-kit';
import { OtlpReceiver, ReceivedMetricPoint, startGrpcOtlpReceiver, startHttpOtlpReceiver } from '../support/otlp-receiver';
import { createTestApp, TestApp } from '../support/test-app';

const CHAIN = 'vendor.test.metered';
const CHAINS = { [CHAIN]: { nodes: [{ id: 'a', typeId: 'core.noop', config: {} }, { id: 'b', typeId: 'core.noop', config: {} }], edges: [{ from: 'a', to: 'b' }] } };
const TOOL_CHAIN = 'vendor.test.metered.tool';
const TOOL_CHAINS = { [TOOL_CHAIN]: { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'mcp:remote.lookup', arguments: { q: 'x' } } }] } };

/** The points of one export round that match: the last value received for `name` with these attributes. */
function last(points: ReceivedMetricPoint[], name: string, attrs: Record<string, unknown> = {}): ReceivedMetricPoint | undefined {
  return points.filter((p) => p.name === name && Object.entries(attrs).every(([k, v]) => p.attributes[k] === v)).at(-1);
}

async function runOnce(t: TestApp, workflowId = CHAIN): Promise<string> {
  const key = await t.key({ scopes: ['runs:create', 'runs:read', 'tools:read'] });
  const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId } });
  expect(r.status).toBe(201);
  const done = await waitForStatus(t, key, r.body.runId as string, ['completed', 'failed'], 30_000);
  expect(done.status).toBe('completed');
  return r.body.runId as string;
}

describe.each([
  ['http/protobuf', startHttpOtlpReceiver],
  ['http/json', startHttpOtlpReceiver],
  ['grpc', startGrpcOtlpReceiver],
] as const)('metrics pushed over OTLP (%s)', (protocol, start) => {
  let receiver: OtlpReceiver;
  let mcp: Awaited<ReturnType<typeof startTracedMcpServer>>;
  let t: TestApp;

  beforeAll(async () => {
    receiver = await start();
    mcp = await startTracedMcpServer();
    t = await createTestApp({
      configFile: { tools: { mcpServers: [{ id: 'remote', transport: 'http', url: mcp.url }] } },
      env: {
        OTEL_METRICS_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        // Long: the test flushes when it wants a round, so every round it reads is one it asked for.
        OTEL_METRIC_EXPORT_INTERVAL: '600000',
        OTEL_SERVICE_NAME: 'openwop-metrics-under-test',
      },
    });
    await installChains(t, 'default', CHAIN, { ...CHAINS, ...TOOL_CHAINS });
  });

  afterAll(async () => {
    await t?.close();
    await mcp?.close();
    await receiver?.close();
  });

  it('advertises the observability block: metrics pushed, their spec names, W3C trace context', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.observability).toEqual({
      otel: { exportProtocols: protocol === 'grpc' ? ['grpc', 'http/json', 'http/protobuf'] : ['http/json', 'http/protobuf'], signals: ['metrics'], propagation: ['tracecontext'] },
      metrics: { supported: true, names: [...SPEC_METRIC_NAMES] },
    });
    // Valid against the published capabilities schema, and mirrored under the `capabilities` wrapper the suite reads.
    expect(SchemaRegistry.shared().validate('capabilities', d.body)).toEqual([]);
    expect(d.body.capabilities.observability).toEqual(d.body.observability);
  });

  it('sends the spec-named and the host metrics to the receiver, and a run moves them', async () => {
    const metrics = t.app.get(MetricsService);
    await metrics.flushOtlp();
    const before = await receiver.waitForMetrics((p) => p.some((x) => x.name === 'openwop_runs_finished_total'));
    const finishedBefore = last(before, 'openwop_runs_finished_total', { status: 'completed' })!;
    expect(finishedBefore).toEqual(expect.objectContaining({ kind: 'sum', monotonic: true }));
    expect(last(before, 'openwop.run.completed', { 'openwop.workflow_id': CHAIN })).toBeUndefined();
    const seen = receiver.metrics.length;

    const runId = await runOnce(t);
    await metrics.flushOtlp();
    const after = (await receiver.waitForMetrics((p) => p.slice(seen).some((x) => x.name === 'openwop.run.duration'))).slice(seen);

    // The export's resource names the service.
    expect(after[0].resource).toEqual(expect.objectContaining({ 'service.name': 'openwop-metrics-under-test' }));
    expect(after.every((p) => p.via === protocol)).toBe(true);
    // spec/v1/observability.md: runs (counter and histogram, with their attributes), queue and backlog gauges, nodes, in-flight runs.
    const attrs = { 'openwop.workflow_id': CHAIN, 'openwop.run_status': 'completed', 'openwop.tenant_id': 'default' };
    expect(last(after, 'openwop.run.completed', attrs)).toEqual(expect.objectContaining({ kind: 'sum', monotonic: true, unit: '1', value: 1 }));
    const duration = last(after, 'openwop.run.duration', attrs)!;
    expect(duration).toEqual(expect.objectContaining({ kind: 'histogram', unit: 's', count: 1 }));
    expect(duration.bounds).toEqual([0.5, 1, 2.5, 5, 10, 30, 60, 300, 600, 1800, 3600]);
    expect(duration.value).toBeGreaterThanOrEqual(0);
    for (const name of ['openwop.queue.depth', 'openwop.run.backlog']) {
      expect(last(after, name, { 'openwop.tenant_id': 'all' })).toEqual(expect.objectContaining({ kind: 'gauge', value: 0 }));
    }
    expect(last(after, 'openwop.run.active', { 'openwop.tenant_id': 'all' })).toEqual(expect.objectContaining({ kind: 'sum', monotonic: false, value: 0 }));
    expect(last(after, 'openwop.node.completed', { 'openwop.node_type': 'core.noop', 'openwop.run_status': 'completed' })?.value).toBeGreaterThanOrEqual(2);
    // The host's own names, as GET /metrics shows them: the finished-runs counter moved by one.
    expect(last(after, 'openwop_runs_finished_total', { status: 'completed' })!.value).toBe(finishedBefore.value + 1);
    expect(last(after, 'openwop_http_requests_total', { method: 'POST', route: '/v1/runs', status: '201' })?.value).toBeGreaterThanOrEqual(1);
    // Never a run id as a metric attribute (unbounded).
    expect(JSON.stringify(after)).not.toContain(runId);
    expect(receiver.refused).toEqual([]);
  });

  it('exports a finished run\'s metrics soon after it ends, not at the next interval (here 10 minutes)', async () => {
    const seen = receiver.metrics.length;
    const startedAt = Date.now();
    await runOnce(t);
    // No flush asked: the run's end schedules one early export.
    const after = (await receiver.waitForMetrics((p) => p.slice(seen).some((x) => x.name === 'openwop.run.duration'))).slice(seen);
    expect(Date.now() - startedAt).toBeLessThan(60_000);
    expect(last(after, 'openwop.run.backlog', { 'openwop.tenant_id': 'all' })).toEqual(expect.objectContaining({ kind: 'gauge' }));
  });

  it('counts a run’s tool calls as activity invocations, with their duration', async () => {
    const metrics = t.app.get(MetricsService);
    const seen = receiver.metrics.length;
    await runOnce(t, TOOL_CHAIN);
    await metrics.flushOtlp();
    const after = (await receiver.waitForMetrics((p) => p.slice(seen).some((x) => x.name === 'openwop.activity.duration'))).slice(seen);
    const attrs = { provider: 'mcp', 'openwop.tool_id': 'mcp:remote.lookup', 'openwop.run_status': 'success' };
    expect(last(after, 'openwop.activity.invocations', attrs)).toEqual(expect.objectContaining({ kind: 'sum', monotonic: true, value: 1 }));
    expect(last(after, 'openwop.activity.duration', attrs)).toEqual(expect.objectContaining({ kind: 'histogram', unit: 's', count: 1 }));
    expect(last(after, 'openwop.node.completed', { 'openwop.node_type': 'core.tool', 'openwop.run_status': 'completed' })?.value).toBe(1);
  });
});

describe('metrics not pushed over OTLP unless asked', () => {
  it('sends nothing and advertises nothing with OTEL_METRICS_EXPORTER unset, even with an endpoint set', async () => {
    const receiver = await startHttpOtlpReceiver();
    const t = await createTestApp({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_METRIC_EXPORT_INTERVAL: '100' } });
    try {
      await installChains(t, 'default', CHAIN, CHAINS);
      const metrics = t.app.get(MetricsService);
      expect(metrics.otlpExportConfig()).toBeUndefined();
      await runOnce(t);
      await metrics.flushOtlp();
      // Several export intervals pass.
      await new Promise((r) => setTimeout(r, 500));
      expect((await t.http('GET', '/.well-known/openwop')).body.observability).toBeUndefined();
    } finally {
      await t.close();
    }
    expect([receiver.metrics, receiver.spans, receiver.refused]).toEqual([[], [], []]);
    await receiver.close();
  });
});
