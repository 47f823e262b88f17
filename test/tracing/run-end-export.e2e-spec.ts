/**
 * A run's spans leave when its execution ends, not at the batch processor's next scheduled export:
 * with the batch delay set far beyond the wait here (OTEL_BSP_SCHEDULE_DELAY=600000), the run's
 * span, its node's, its tool call's and the MCP client span under it still reach the receiver, and
 * nothing calls flushTracing. Against the conformance suite's fake MCP server.
 */
import { McpFakeServer } from '../fixtures/mcp/conformance/mcp-fake-server';
import { installChains, waitForStatus } from '../runs/run-kit';
import { OtlpReceiver, startHttpOtlpReceiver } from '../support/otlp-receiver';
import { createTestApp, TestApp } from '../support/test-app';

const PURE = { safetyTier: 'pure', replayPolicy: 'deterministic', egress: 'none' };

describe('run spans are exported when the run ends (e2e)', () => {
  let receiver: OtlpReceiver;
  let fake: McpFakeServer;
  let t: TestApp;
  let key: string;

  const saved = process.env.OTEL_BSP_SCHEDULE_DELAY;

  beforeAll(async () => {
    // The batch processor reads its settings from the process environment.
    process.env.OTEL_BSP_SCHEDULE_DELAY = '600000';
    receiver = await startHttpOtlpReceiver();
    fake = new McpFakeServer();
    await fake.start();
    t = await createTestApp({
      env: { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
      configFile: { tools: { mcpServers: [{ id: 'fake', transport: 'http', url: fake.endpoint(), classification: { echo: PURE } }] } },
    });
    await installChains(t, 'default', 'vendor.test.export', { 'vendor.test.export.echo': { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'mcp:fake.echo', arguments: { text: 'hi' } } }] } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'tools:read'] });
  });

  afterAll(async () => {
    if (saved === undefined) delete process.env.OTEL_BSP_SCHEDULE_DELAY;
    else process.env.OTEL_BSP_SCHEDULE_DELAY = saved;
    await t?.close();
    await fake?.stop();
    await receiver?.close();
  });

  it('exports the run, node, tool-call and MCP client spans without waiting for the batch delay', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.export.echo' } });
    expect(r.status).toBe(201);
    const runId = r.body.runId as string;
    expect((await waitForStatus(t, key, runId, ['completed'], 30_000)).status).toBe('completed');
    const spans = await receiver.waitFor((s) => s.some((x) => x.name === 'openwop.run' && x.attributes['openwop.run_id'] === runId), 30_000);
    const run = spans.find((x) => x.name === 'openwop.run' && x.attributes['openwop.run_id'] === runId)!;
    const inTrace = spans.filter((x) => x.traceId === run.traceId).map((x) => x.name);
    expect(inTrace).toEqual(expect.arrayContaining(['openwop.run', 'openwop.node.core.tool', 'openwop.tool.call', 'tools/call echo']));
    const mcp = spans.find((x) => x.traceId === run.traceId && x.name === 'tools/call echo')!;
    expect(mcp.attributes['openwop.otel.mcp_mapping_version']).toBe('0');
  });
});
