/**
 * Tracing is off by default and then costs nothing: the host (and the CLI) never load the
 * OpenTelemetry SDK, exporters or resources, discovery advertises no `observability` block, and a request's trace
 * context is still kept with the run it creates (so a replica with tracing on continues the trace).
 * Checked in processes of their own, whose loaded modules are reported at exit.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startTracedMcpServer } from '../fixtures/mcp/traced-http-fixture';
import { startHostProcess } from '../support/host-process';
import { createScratchDatabase } from '../support/scratch-db';

const PRELOAD = path.join(__dirname, '../support/report-loaded-modules.js');
const ROOT = path.join(__dirname, '../..');
const OTEL = `${path.sep}node_modules${path.sep}@opentelemetry${path.sep}`;

function reportEnv(): { env: Record<string, string>; read(): string[] } {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'otel-off-')), 'loaded.txt');
  return {
    env: { NODE_OPTIONS: `--require ${PRELOAD}`, OPENWOP_TEST_MODULES_REPORT: file, OPENWOP_TEST_MODULES_MATCH: OTEL },
    // The API package alone is a no-op facade that prom-client loads when installed (for exemplars);
    // the SDK, exporters and resources are what tracing adds.
    read: () => fs.readFileSync(file, 'utf8').split('\n').filter((p) => p && !p.includes(`@opentelemetry${path.sep}api${path.sep}`)),
  };
}

const CHAINS = {
  tenant: 'default',
  name: 'vendor.test.off',
  chains: { 'vendor.test.off.chain': { nodes: [{ id: 'a', typeId: 'core.noop', config: {} }, { id: 'call', typeId: 'core.tool', config: { toolId: 'mcp:remote.lookup', arguments: { q: 'x' } } }], edges: [{ from: 'a', to: 'call' }] } },
};

/** Serves one run request in a host process of its own; `finish()` stops it and answers what it loaded. */
async function serveAndRun(env: Record<string, string>) {
  const db = await createScratchDatabase();
  const report = reportEnv();
  const mcp = await startTracedMcpServer();
  const configFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'otel-off-cfg-')), 'config.json');
  fs.writeFileSync(configFile, JSON.stringify({ tools: { mcpServers: [{ id: 'remote', transport: 'http', url: mcp.url }] } }));
  const hp = await startHostProcess({ env: { DATABASE_URL: db.url, OPENWOP_CONFIG: configFile, ...report.env, ...env }, chains: CHAINS, scopes: ['runs:create', 'runs:read', 'tools:read'] }).catch(async (e) => {
    await mcp.close();
    await db.drop();
    throw e;
  });
  const finish = async () => {
    await hp.close();
    await mcp.close();
    await db.drop();
    return report.read();
  };
  try {
    const discovery = await hp.http('GET', '/.well-known/openwop');
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const r = await hp.http('POST', '/v1/runs', { body: { workflowId: 'vendor.test.off.chain' }, headers: { traceparent } });
    expect(r.status).toBe(201);
    const [row] = await hp.query<{ trace_parent: string | null }>(`SELECT "trace_parent" FROM "run" WHERE "id" = $1`, [r.body.runId]);
    for (let i = 0; ; i++) {
      const run = await hp.http('GET', `/v1/runs/${r.body.runId}`);
      if (run.body.status === 'completed') break;
      if (run.body.status === 'failed' || i > 300) throw new Error(`the run did not complete: ${JSON.stringify(run.body)}`);
      await new Promise((res) => setTimeout(res, 100));
    }
    const toolCalls = mcp.seen.filter((m) => m.method === 'tools/call').map((m) => m.traceparent);
    return { discovery: discovery.body, row, traceparent, toolCalls, finish };
  } catch (e) {
    await finish();
    throw e;
  }
}

describe('tracing off by default', () => {
  it('serves without loading OpenTelemetry, advertises no observability, and keeps the caller’s trace context with the run', async () => {
    const off = await serveAndRun({});
    expect(off.discovery.observability).toBeUndefined();
    // No span exists: the request's own context is what the run keeps, unchanged.
    expect(off.row.trace_parent).toBe(off.traceparent);
    // ...and what the tool call forwards to the MCP server.
    expect(off.toolCalls).toEqual([off.traceparent]);
    expect(await off.finish()).toEqual([]);
  });

  it('loads the SDK only when tracing is on (the same check sees it then)', async () => {
    const on = await serveAndRun({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    expect(on.discovery.observability).toEqual({ otel: { exportProtocols: ['http/json', 'http/protobuf'], signals: ['traces'], propagation: ['tracecontext'] } });
    // The run keeps the request's span (same trace, the host's span id), not the caller's.
    expect(on.row.trace_parent).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/);
    expect(on.row.trace_parent).not.toBe(on.traceparent);
    expect(on.toolCalls).toHaveLength(1);
    expect(on.toolCalls[0]).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/);
    expect([on.traceparent, on.row.trace_parent]).not.toContain(on.toolCalls[0]);
    const loaded = await on.finish();
    expect(loaded.some((p) => p.includes(`@opentelemetry${path.sep}sdk-trace-base`))).toBe(true);
  });

  it('never loads OpenTelemetry for `openwop-host --help`', async () => {
    const report = reportEnv();
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [path.join(ROOT, 'bin/openwop-host.js'), '--help'], { env: { ...process.env, ...report.env, OTEL_TRACES_EXPORTER: 'otlp' }, timeout: 30_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
    );
    expect(out).toContain('serve');
    expect(report.read()).toEqual([]);
  });
});
