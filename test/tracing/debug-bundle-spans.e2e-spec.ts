/**
 * The debug bundle's spans (debug-bundle.md §"spans field", RFC 0207 §C): with tracing on, a run
 * started with a caller's `traceparent` has in its bundle the spans the host exported for it, with
 * the ids the OTLP receiver got: `openwop.run` in the caller's trace under the creating request's
 * span, its node span under it, the tool call under the node and the MCP client request under the
 * call, each ended, with its kind and status. The same bundle read twice carries the same spans;
 * the bundle is valid against the published schema; another tenant's key reads 404. Against the
 * conformance suite's fake MCP server.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { McpFakeServer } from '../fixtures/mcp/conformance/mcp-fake-server';
import { installChains, waitForStatus } from '../runs/run-kit';
import { OtlpReceiver, startHttpOtlpReceiver } from '../support/otlp-receiver';
import { createTestApp, TestApp } from '../support/test-app';

const PURE = { safetyTier: 'pure', replayPolicy: 'deterministic', egress: 'none' };
const SCHEMA = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'schemas', 'openwop', 'debug-bundle.schema.json'), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const validate = ajv.compile(SCHEMA);

interface BundleSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  kind: string;
  startedAt: string;
  endedAt: string | null;
  status: { code: string; message?: string };
  attributes: Record<string, unknown>;
}

describe('debug bundle spans (e2e)', () => {
  let receiver: OtlpReceiver;
  let fake: McpFakeServer;
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    receiver = await startHttpOtlpReceiver();
    fake = new McpFakeServer();
    await fake.start();
    t = await createTestApp({
      env: { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
      configFile: { tools: { mcpServers: [{ id: 'fake', transport: 'http', url: fake.endpoint(), classification: { echo: PURE } }] } },
    });
    await installChains(t, 'default', 'vendor.test.bundle', { 'vendor.test.bundle.echo': { nodes: [{ id: 'call', typeId: 'core.tool', config: { toolId: 'mcp:fake.echo', arguments: { text: 'hi' } } }] } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'tools:read'] });
  });

  afterAll(async () => {
    await t?.close();
    await fake?.stop();
    await receiver?.close();
  });

  it('carries the run\'s exported spans, in the caller\'s trace, with the ids the collector received', async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const r = await t.http('POST', '/v1/runs', { token: key, headers: { traceparent: `00-${traceId}-${callerSpan}-01` }, body: { workflowId: 'vendor.test.bundle.echo' } });
    expect(r.status).toBe(201);
    const runId = r.body.runId as string;
    expect((await waitForStatus(t, key, runId, ['completed'], 30_000)).status).toBe('completed');
    const received = await receiver.waitFor((s) => s.some((x) => x.name === 'openwop.run' && x.attributes['openwop.run_id'] === runId), 30_000);

    const res = await t.http('GET', `/v1/runs/${runId}/debug-bundle`, { token: key });
    expect(res.status).toBe(200);
    expect(validate(res.body)).toBe(true);
    const spans = res.body.spans as BundleSpan[];
    const byName = (n: string) => spans.find((s) => s.name === n)!;
    // In start order (a `tools/list` of the MCP server may come before the call, when the catalog reads it).
    expect(spans[0].name).toBe('openwop.run');
    expect(spans.map((s) => s.name)).toEqual(expect.arrayContaining(['openwop.node.core.tool', 'openwop.tool.call', 'tools/call echo']));
    const run = byName('openwop.run');
    const node = byName('openwop.node.core.tool');
    const call = byName('openwop.tool.call');
    const mcp = byName('tools/call echo');
    // The run span joins the caller's trace, under the span of the request that created the run.
    expect(spans.every((s) => s.traceId === traceId)).toBe(true);
    const request = received.find((x) => x.traceId === traceId && x.name === 'POST /v1/runs')!;
    expect(request.parentSpanId).toBe(callerSpan);
    expect([run.parentSpanId, node.parentSpanId, call.parentSpanId, mcp.parentSpanId]).toEqual([request.spanId, run.spanId, node.spanId, call.spanId]);
    expect([run.kind, node.kind, mcp.kind]).toEqual(['internal', 'internal', 'client']);
    expect(run.attributes).toMatchObject({ 'openwop.run_id': runId, 'openwop.run_status': 'completed' });
    for (const s of spans) {
      expect(s.endedAt).not.toBeNull();
      expect(Date.parse(s.endedAt!)).toBeGreaterThanOrEqual(Date.parse(s.startedAt));
      expect(['unset', 'ok', 'error']).toContain(s.status.code);
    }
    // Exactly what was exported: each span reached the collector under the same ids.
    await receiver.waitFor((all) => spans.every((s) => all.some((x) => x.spanId === s.spanId)), 30_000);
    const exported = receiver.spans.filter((x) => x.traceId === traceId);
    for (const s of spans) expect(exported.find((x) => x.spanId === s.spanId)).toMatchObject({ name: s.name, parentSpanId: s.parentSpanId });

    // Read again: the same spans.
    const again = await t.http('GET', `/v1/runs/${runId}/debug-bundle`, { token: key });
    expect(again.body.spans).toEqual(spans);

    // Another tenant's key: the run does not exist for it.
    const other = await t.key({ tenant: 'someone-else', scopes: ['runs:read'] });
    expect((await t.http('GET', `/v1/runs/${runId}/debug-bundle`, { token: other })).status).toBe(404);
  });
});
