/**
 * gRPC ↔ REST parity: the same request over REST and over openwop.v1.Engine gives the same result
 * once the proto messages are read back as REST JSON bodies (grpc-transport.md §Conformance 1-2).
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { installChains, noopChain, TestEvent, waitForStatus } from '../runs/run-kit';
import { createGrpcTestApp, GrpcTestApp, metadata } from './grpc-kit';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The events of an SSE body (`id`, `event`, `data` frames), in the order sent. */
function sseEvents(text: string): TestEvent[] {
  const out: TestEvent[] = [];
  for (const frame of text.split('\n\n')) {
    if (!frame.trim() || frame.startsWith(':')) continue;
    const id = /^id: (\d+)$/m.exec(frame);
    const type = /^event: (.+)$/m.exec(frame);
    const data = /^data: (.+)$/m.exec(frame);
    if (!id || !type || !data) throw new Error(`malformed SSE frame: ${frame}`);
    const e = JSON.parse(data[1]) as TestEvent;
    expect([Number(id[1]), type[1]]).toEqual([e.sequence, e.type]);
    out.push(e);
  }
  return out;
}

describe('gRPC transport: parity with REST', () => {
  let g: GrpcTestApp;
  let token: string;
  const registry = SchemaRegistry.shared();

  beforeAll(async () => {
    g = await createGrpcTestApp();
    token = await g.t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    await installChains(g.t, 'default', 'vendor.test.grpc', {
      'vendor.test.grpc.chain': noopChain(3),
      'vendor.test.grpc.slow': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 60_000 } }], edges: [] },
    });
  });

  afterAll(async () => {
    await g?.close();
  });

  it('GetCapabilities answers the /.well-known/openwop document, which advertises this listener', async () => {
    const rest = await g.t.http('GET', '/.well-known/openwop');
    expect(rest.status).toBe(200);
    const r = await g.engine.call('GetCapabilities', {});
    expect(r.ok).toBe(true);
    expect(r.ok && r.body).toEqual(rest.body);
    expect(rest.body.supportedTransports).toEqual(['rest', 'grpc']);
    expect(rest.body.grpc).toEqual({ supported: true, endpoint: `grpc://127.0.0.1:${g.port}`, service: 'openwop.v1.Engine', tls: 'disabled' });
    expect(registry.validate('capabilities', rest.body)).toEqual([]);
  });

  it('CreateRun, GetRun and StreamRunEvents round-trip a run with the events REST shows, SSE included', async () => {
    const body = { workflowId: 'vendor.test.grpc.chain', inputs: { who: 'grpc', nested: { list: [1, 'two', null, { deep: true }], empty: {} } }, tags: ['grpc'], metadata: { via: 'grpc' } };
    const created = await g.engine.call('CreateRun', body, metadata(token));
    if (!created.ok) throw new Error(JSON.stringify(created.error));
    const runId: string = created.body.runId;
    const done = await waitForStatus(g.t, token, runId, ['completed', 'failed']);
    expect(done.status).toBe('completed');

    const viaGrpc = await g.engine.call('GetRun', { runId }, metadata(token));
    const viaRest = await g.t.http('GET', `/v1/runs/${runId}`, { token });
    expect(viaGrpc.ok && viaGrpc.body).toEqual(viaRest.body);
    // The era is on both (the proto declares event_log_schema_version).
    expect(viaRest.body.eventLogSchemaVersion).toBe(3);

    // Every event (debug) on both; the default `updates` is compared below.
    const sse = sseEvents((await g.t.http('GET', `/v1/runs/${runId}/events?streamMode=debug`, { token })).text);
    expect(sse.length).toBeGreaterThanOrEqual(5);
    const updates = g.engine.stream({ runId }, metadata(token));
    expect(await updates.done).toEqual({ code: grpc.status.OK });
    expect(updates.messages).toEqual(sseEvents((await g.t.http('GET', `/v1/runs/${runId}/events`, { token })).text));
    expect(updates.messages.map((e: Json) => e.type)).not.toContain('node.started');
    const s = g.engine.stream({ runId, streamModes: ['debug'] }, metadata(token));
    expect(await s.done).toEqual({ code: grpc.status.OK });
    expect(s.messages).toEqual(sse);
    expect(s.messages.map((e: Json) => e.sequence)).toEqual(sse.map((_, i) => i + 1));
    expect(s.messages[s.messages.length - 1].type).toBe('run.completed');
    for (const e of s.messages) expect(registry.validate('run-event', e)).toEqual([]);

    // Resume: after last_sequence 2, exactly what SSE sends after Last-Event-ID 2.
    const resumed = g.engine.stream({ runId, lastSequence: 2, streamModes: ['debug'] }, metadata(token));
    expect(await resumed.done).toEqual({ code: grpc.status.OK });
    const sseResumed = sseEvents((await g.t.http('GET', `/v1/runs/${runId}/events?streamMode=debug`, { token, headers: { 'last-event-id': '2' } })).text);
    expect(resumed.messages).toEqual(sseResumed);
    expect(resumed.messages[0].sequence).toBe(3);
  });

  it('the Node client example runs a workflow end to end against the listener', async () => {
    const script = path.join(__dirname, '..', '..', 'examples', 'grpc-client', 'run-workflow.js');
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [script, 'vendor.test.grpc.chain', '{"inputs":{"who":"example"}}'], { env: { ...process.env, OPENWOP_GRPC_TARGET: g.target, OPENWOP_API_KEY: token }, timeout: 30_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
      ),
    );
    expect(out).toMatch(/^host speaks OpenWOP 1\.0; transports rest, grpc; gRPC grpc:\/\/127\.0\.0\.1:\d+$/m);
    expect(out).toMatch(/^run [0-9a-f-]{36} (pending|running)$/m);
    expect(out).toMatch(/^ {2}#1 run\.started /m);
    expect(out).toMatch(/ run\.completed /);
    expect(out).toMatch(/ended completed; node states \{"n1":\{/);
  });
});
