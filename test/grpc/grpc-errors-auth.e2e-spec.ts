/**
 * The gRPC transport's errors and access control: every refusal is the REST one, mapped by the
 * profile's table to a google.rpc.Status whose details[] carry the very envelope REST answers
 * (grpc-transport.md §"Error mapping", §Conformance 3-4), decided by the same guard, scopes,
 * tenant and workspace filters and rate limits.
 */
import * as grpc from '@grpc/grpc-js';
import { ENGINE_METHODS } from '../../src/transport/grpc/engine-method';
import { loadEngineRoot } from '../../src/transport/grpc/engine-proto';
import { EngineServiceImplementation } from '../../src/transport/grpc/engine-service';
import { decodeRpcStatus, ERROR_ENVELOPE_TYPE_URL } from '../../src/transport/grpc/error-status';
import { installChains, noopChain, waitForStatus } from '../runs/run-kit';
import { parsePrometheusText as parsePrometheus, valueOf } from '../operations/prometheus-text';
import { Writer } from 'protobufjs';
import { createGrpcTestApp, failure, GrpcTestApp, metadata, UnaryResult } from './grpc-kit';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

function refused(r: UnaryResult) {
  if (r.ok) throw new Error(`expected a refusal, got ${JSON.stringify(r.body)}`);
  return r.error;
}

/** Every method of openwop.v1.Engine is served now; one added to the proto without a provider would answer UNIMPLEMENTED. */
const NOT_SERVED: string[] = [];

describe('gRPC transport: errors, authentication and scopes', () => {
  let g: GrpcTestApp;
  let full: string;
  let readOnly: string;
  let otherTenant: string;
  let wsA: string;
  let wsB: string;
  let runId: string;

  beforeAll(async () => {
    g = await createGrpcTestApp({ env: { OPENWOP_METRICS: 'public' } });
    full = await g.t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    readOnly = await g.t.key({ scopes: ['runs:read'] });
    otherTenant = await g.t.key({ tenant: 'other', scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    wsA = await g.t.key({ workspace: 'ws-a', scopes: ['runs:create', 'runs:read'] });
    wsB = await g.t.key({ workspace: 'ws-b', scopes: ['runs:create', 'runs:read'] });
    await installChains(g.t, 'default', 'vendor.test.grpc', { 'vendor.test.grpc.chain': noopChain(2) });
    const created = await g.t.http('POST', '/v1/runs', { token: full, body: { workflowId: 'vendor.test.grpc.chain' } });
    expect(created.status).toBe(201);
    runId = created.body.runId;
    await waitForStatus(g.t, full, runId, ['completed']);
  });

  afterAll(async () => {
    await g?.close();
  });

  /** The REST answer and the gRPC one for the same request: the envelope must be the REST body. */
  async function same(method: string, grpcBody: Json, md: grpc.Metadata, rest: { method: string; url: string; token?: string; body?: unknown; headers?: Record<string, string> }, code: grpc.status) {
    const viaRest = await g.t.http(rest.method, rest.url, { token: rest.token, body: rest.body, headers: rest.headers });
    const e = refused(await g.engine.call(method, grpcBody, md));
    expect({ code: grpc.status[e.code], envelope: e.envelope }).toEqual({ code: grpc.status[code], envelope: viaRest.body });
    expect(e.message).toBe(viaRest.body.message);
    return { e, rest: viaRest };
  }

  it('no authorization metadata: UNAUTHENTICATED with the REST 401 envelope', async () => {
    const { rest } = await same('CreateRun', { workflowId: 'vendor.test.grpc.chain' }, metadata(), { method: 'POST', url: '/v1/runs', body: { workflowId: 'vendor.test.grpc.chain' } }, grpc.status.UNAUTHENTICATED);
    expect(rest.status).toBe(401);
    await same('GetRun', { runId }, metadata(), { method: 'GET', url: `/v1/runs/${runId}` }, grpc.status.UNAUTHENTICATED);
    const s = g.engine.stream({ runId }, metadata());
    expect((await s.done).code).toBe(grpc.status.UNAUTHENTICATED);
    expect(s.messages).toEqual([]);
  });

  it('an invalid bearer, and a malformed authorization value: UNAUTHENTICATED', async () => {
    await same('GetRun', { runId }, metadata('owk_not-a-real-key'), { method: 'GET', url: `/v1/runs/${runId}`, token: 'owk_not-a-real-key' }, grpc.status.UNAUTHENTICATED);
    await same('GetRun', { runId }, metadata(undefined, { authorization: 'Basic dXNlcjpwdw==' }), { method: 'GET', url: `/v1/runs/${runId}`, headers: { authorization: 'Basic dXNlcjpwdw==' } }, grpc.status.UNAUTHENTICATED);
    await same('GetRun', { runId }, metadata(undefined, { authorization: 'Bearer' }), { method: 'GET', url: `/v1/runs/${runId}`, headers: { authorization: 'Bearer' } }, grpc.status.UNAUTHENTICATED);
  });

  it('a valid bearer without the scope: PERMISSION_DENIED with the required and missing scopes', async () => {
    const { e } = await same('CreateRun', { workflowId: 'vendor.test.grpc.chain' }, metadata(readOnly), { method: 'POST', url: '/v1/runs', token: readOnly, body: { workflowId: 'vendor.test.grpc.chain' } }, grpc.status.PERMISSION_DENIED);
    expect(e.envelope?.details).toEqual({ requiredScopes: ['runs:create'], missingScopes: ['runs:create'] });
    await same('CancelRun', { runId }, metadata(readOnly), { method: 'POST', url: `/v1/runs/${runId}/cancel`, token: readOnly, body: {} }, grpc.status.PERMISSION_DENIED);
  });

  it("another tenant's run, or another workspace's, is NOT_FOUND exactly like an unknown one", async () => {
    const foreign = await same('GetRun', { runId }, metadata(otherTenant), { method: 'GET', url: `/v1/runs/${runId}`, token: otherTenant }, grpc.status.NOT_FOUND);
    const unknown = refused(await g.engine.call('GetRun', { runId: '00000000-0000-4000-8000-000000000000' }, metadata(full)));
    expect(unknown.envelope).toEqual(foreign.e.envelope);
    await same('CancelRun', { runId }, metadata(otherTenant), { method: 'POST', url: `/v1/runs/${runId}/cancel`, token: otherTenant, body: {} }, grpc.status.NOT_FOUND);
    const s = g.engine.stream({ runId }, metadata(otherTenant));
    const ended = await s.done;
    expect([ended.code, ended.error?.envelope]).toEqual([grpc.status.NOT_FOUND, foreign.e.envelope]);
    expect(s.messages).toEqual([]);

    const inA = await g.engine.call('CreateRun', { workflowId: 'vendor.test.grpc.chain' }, metadata(wsA));
    if (!inA.ok) throw new Error(JSON.stringify(inA.error));
    expect((await g.engine.call('GetRun', { runId: inA.body.runId }, metadata(wsA))).ok).toBe(true);
    await same('GetRun', { runId: inA.body.runId }, metadata(wsB), { method: 'GET', url: `/v1/runs/${inA.body.runId}`, token: wsB }, grpc.status.NOT_FOUND);
  });

  it('validation: the REST DTO refuses what REST refuses, in the same words (INVALID_ARGUMENT)', async () => {
    await same('CreateRun', {}, metadata(full), { method: 'POST', url: '/v1/runs', token: full, body: {} }, grpc.status.INVALID_ARGUMENT);
    // A malformed member the proto carries (a callback URL that is no URL) is refused the same way.
    const extra = { workflowId: 'vendor.test.grpc.chain', callbackUrl: 'not a url' };
    await same('CreateRun', extra, metadata(full), { method: 'POST', url: '/v1/runs', token: full, body: extra }, grpc.status.INVALID_ARGUMENT);
    const longTags = { workflowId: 'vendor.test.grpc.chain', tags: ['x'.repeat(300)] };
    await same('CreateRun', longTags, metadata(full), { method: 'POST', url: '/v1/runs', token: full, body: longTags }, grpc.status.INVALID_ARGUMENT);
    const reason = { reason: 'r'.repeat(501) };
    await same('CancelRun', { runId, ...reason }, metadata(full), { method: 'POST', url: `/v1/runs/${runId}/cancel`, token: full, body: reason }, grpc.status.INVALID_ARGUMENT);
    // An unknown stream mode is refused by both, with the same envelope.
    const rest = await g.t.http('GET', `/v1/runs/${runId}/events?streamMode=bogus`, { token: full });
    expect(rest.status).toBe(400);
    expect(rest.body.error).toBe('unsupported_stream_mode');
    const s = g.engine.stream({ runId, streamModes: ['bogus'] }, metadata(full));
    const ended = await s.done;
    expect([ended.code, ended.error?.envelope]).toEqual([grpc.status.INVALID_ARGUMENT, rest.body]);
  });

  it('JSON shape limits hold for request messages as for REST bodies (NUL in a string: INVALID_ARGUMENT)', async () => {
    const body = { workflowId: 'vendor.test.grpc.chain', inputs: { bad: 'a\u0000b' } };
    await same('CreateRun', body, metadata(full), { method: 'POST', url: '/v1/runs', token: full, body }, grpc.status.INVALID_ARGUMENT);
    // 45 levels of JSON fit protobuf's 100 message levels (and REST's 64).
    const deep = (levels: number): Json => (levels ? { d: deep(levels - 1) } : {});
    expect((await g.engine.call('CreateRun', { workflowId: 'vendor.test.grpc.chain', inputs: deep(45) }, metadata(full))).ok).toBe(true);
    // Deeper than protobuf decodes (protobufjs encodes no such message; these bytes are built by hand).
    let struct: Uint8Array = new Uint8Array(0);
    for (let i = 0; i < 80; i++) {
      const value = Writer.create().uint32((5 << 3) | 2).bytes(struct).finish();
      const entry = Writer.create().uint32((1 << 3) | 2).string('d').uint32((2 << 3) | 2).bytes(value).finish();
      struct = Writer.create().uint32((1 << 3) | 2).bytes(entry).finish();
    }
    const bytes = Buffer.from(Writer.create().uint32((1 << 3) | 2).string('vendor.test.grpc.chain').uint32((2 << 3) | 2).bytes(struct).finish());
    const tooDeep = await new Promise<grpc.ServiceError>((resolve) =>
      g.engine.client.makeUnaryRequest('/openwop.v1.Engine/CreateRun', (b: Buffer) => b, (b: Buffer) => b, bytes, metadata(full), (err: grpc.ServiceError | null) => resolve(err!)),
    );
    const f = failure(tooDeep);
    expect([f.code, f.envelope]).toEqual([grpc.status.INVALID_ARGUMENT, { error: 'validation_error', message: "The request message nests deeper than protobuf's 100 message levels (in a Struct, about 49 levels of JSON)." }]);
    // REST's parser refuses constructor.prototype (prototype poisoning); a Struct cannot smuggle it in.
    const poisoned = { workflowId: 'vendor.test.grpc.chain', inputs: { constructor: { prototype: { admin: true } } } };
    const p = refused(await g.engine.call('CreateRun', poisoned, metadata(full)));
    expect([p.code, p.envelope?.error, p.envelope?.details]).toEqual([grpc.status.INVALID_ARGUMENT, 'validation_error', { path: '/inputs/constructor' }]);
    expect((await g.t.http('POST', '/v1/runs', { token: full, body: poisoned })).status).toBe(400);
  });

  it('an unknown workflow and an idempotency conflict answer what REST answers', async () => {
    const body = { workflowId: 'vendor.test.grpc.missing' };
    const { rest } = await same('CreateRun', body, metadata(full), { method: 'POST', url: '/v1/runs', token: full, body }, grpc.status.NOT_FOUND);
    expect(rest.status).toBe(404);

    // The same Idempotency-Key over both transports: the same run; another body under it is ABORTED.
    const key = `grpc-${Date.now()}`;
    const first = await g.engine.call('CreateRun', { workflowId: 'vendor.test.grpc.chain', inputs: { n: 1 } }, metadata(full, { 'idempotency-key': key }));
    if (!first.ok) throw new Error(JSON.stringify(first.error));
    const again = await g.t.http('POST', '/v1/runs', { token: full, body: { workflowId: 'vendor.test.grpc.chain', inputs: { n: 1 } }, headers: { 'idempotency-key': key } });
    expect(again.body.runId).toBe(first.body.runId);
    const other = { workflowId: 'vendor.test.grpc.chain', inputs: { n: 2 } };
    await same('CreateRun', other, metadata(full, { 'idempotency-key': key }), { method: 'POST', url: '/v1/runs', token: full, body: other, headers: { 'idempotency-key': key } }, grpc.status.ABORTED);
    // Two values arrive as one HTTP/2 header list, "a, b", which REST refuses as a key too.
    await same('CreateRun', other, metadata(full, { 'idempotency-key': ['a', 'b'] }), { method: 'POST', url: '/v1/runs', token: full, body: other, headers: { 'idempotency-key': 'a, b' } }, grpc.status.INVALID_ARGUMENT);
  });

  it('every method the host does not serve answers UNIMPLEMENTED with the envelope, before any authentication', async () => {
    const notServed = ENGINE_METHODS.filter((m) => NOT_SERVED.includes(m));
    expect(notServed).toEqual(NOT_SERVED);
    for (const method of notServed) {
      const e = refused(await g.engine.call(method, {}, metadata()));
      expect([method, e.code, e.envelope]).toEqual([
        method,
        grpc.status.UNIMPLEMENTED,
        {
          error: 'not_implemented',
          message: `This host does not serve ${method}: its REST operation is not served either.`,
          details: { method: `openwop.v1.Engine/${method}`, correlationId: expect.stringMatching(/^[0-9a-f-]{36}$/) },
        },
      ]);
    }
    // Each method with its REST twin and that route's scopes (schemas/route-scopes.txt, docs/grpc.md).
    expect(g.t.app.get(EngineServiceImplementation).served()).toEqual([
      { method: 'GetCapabilities', kind: 'unary', route: 'GET /.well-known/openwop', scopes: [] },
      { method: 'GetWorkflow', kind: 'unary', route: 'GET /v1/workflows/:workflowId', scopes: [], anyOfScopes: ['manifest:read', 'runs:create'] },
      { method: 'CreateRun', kind: 'unary', route: 'POST /v1/runs', scopes: ['runs:create'] },
      { method: 'GetRun', kind: 'unary', route: 'GET /v1/runs/:runId', scopes: ['runs:read'] },
      { method: 'CancelRun', kind: 'unary', route: 'POST /v1/runs/:runId/cancel', scopes: ['runs:cancel'] },
      { method: 'BulkCancelRuns', kind: 'unary', route: 'POST /v1/runs::bulk-cancel', scopes: ['runs:cancel'] },
      { method: 'ForkRun', kind: 'unary', route: 'POST /v1/runs/:runId(^[^/:]+)::fork', scopes: ['runs:create', 'runs:read'] },
      { method: 'PauseRun', kind: 'unary', route: 'POST /v1/runs/:runId(^[^/:]+)::pause', scopes: ['runs:cancel'] },
      { method: 'ResumeRun', kind: 'unary', route: 'POST /v1/runs/:runId(^[^/:]+)::resume', scopes: ['runs:cancel'] },
      { method: 'StreamRunEvents', kind: 'server-stream', route: 'GET /v1/runs/:runId/events', scopes: ['runs:read'] },
      { method: 'ResolveInterruptByRun', kind: 'unary', route: 'POST /v1/runs/:runId/interrupts/:nodeId', scopes: ['approvals:respond'] },
      { method: 'ResolveInterruptByToken', kind: 'unary', route: 'POST /v1/interrupts/:token', scopes: [] },
      { method: 'InspectInterruptByToken', kind: 'unary', route: 'GET /v1/interrupts/:token', scopes: [] },
      { method: 'GetArtifact', kind: 'unary', route: 'GET /v1/runs/:runId/artifacts/:artifactId', scopes: ['artifacts:read'] },
      { method: 'RegisterWebhook', kind: 'unary', route: 'POST /v1/webhooks', scopes: ['runs:read'], anyOfScopes: ['webhooks:manage', 'runs:create'] },
      { method: 'UnregisterWebhook', kind: 'unary', route: 'DELETE /v1/webhooks/:webhookId', scopes: [], anyOfScopes: ['webhooks:manage', 'runs:create'] },
      { method: 'VerifyAuditLog', kind: 'unary', route: 'GET /v1/audit/verify', scopes: ['audit:read'] },
      { method: 'ListRuns', kind: 'unary', route: 'GET /v1/runs', scopes: ['runs:read'] },
      { method: 'ListTools', kind: 'unary', route: 'GET /v1/tools', scopes: ['tools:read'] },
      { method: 'ListApprovals', kind: 'unary', route: 'GET /v1/approvals', scopes: ['approvals:respond'] },
      { method: 'ListWorkflows', kind: 'unary', route: 'GET /v1/workflows', scopes: [], anyOfScopes: ['manifest:read', 'runs:create'] },
    ]);
    expect(g.t.app.get(EngineServiceImplementation).served().map((m: { method: string }) => m.method).sort()).toEqual(ENGINE_METHODS.filter((m) => !NOT_SERVED.includes(m)).sort());
  });

  it('the status carries the envelope as the only detail, under its type URL', async () => {
    const md = await new Promise<grpc.Metadata>((resolve) => {
      g.engine.client.GetRun({ run_id: runId }, new grpc.Metadata(), (err: grpc.ServiceError) => resolve(err.metadata));
    });
    const status = decodeRpcStatus(loadEngineRoot(), md.get('grpc-status-details-bin')[0] as Buffer);
    expect(status.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(status.details.map((d: { type_url: string }) => d.type_url)).toEqual([ERROR_ENVELOPE_TYPE_URL]);
  });

  it('every call is counted per method and status code in /metrics and logged once, with the trace id of its traceparent', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const before = parsePrometheus((await g.t.http('GET', '/metrics')).text);
    await g.engine.call('GetRun', { runId }, metadata(full, { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, 'x-request-id': 'grpc-trace-probe' }));
    await g.engine.call('GetRun', { runId: 'nope' }, metadata(full, { traceparent: 'not-a-traceparent' }));
    const after = parsePrometheus((await g.t.http('GET', '/metrics')).text);
    const delta = (labels: Record<string, string>) => valueOf(after, 'openwop_grpc_requests_total', labels) - valueOf(before, 'openwop_grpc_requests_total', labels);
    expect(delta({ method: 'GetRun', code: 'OK' })).toBe(1);
    expect(delta({ method: 'GetRun', code: 'NOT_FOUND' })).toBe(1);
    expect(valueOf(after, 'openwop_grpc_request_duration_seconds_count', { method: 'GetRun', code: 'OK' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(after, 'openwop_grpc_requests_in_flight', { method: 'GetRun' })).toBe(0);
    const line = g.t.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'grpc call completed' && l.requestId === 'grpc-trace-probe');
    expect(line).toMatchObject({ method: 'openwop.v1.Engine/GetRun', code: 'OK', tenant: 'default', principal: 'tester', credential: 'api-key', traceId });
    expect(JSON.stringify(g.t.logs)).not.toContain(full);
  });
});

describe('gRPC transport: rate limits', () => {
  let g: GrpcTestApp;

  beforeAll(async () => {
    // Hour-long windows: the counters are fixed windows, and a test's calls straddling a minute's boundary
    // started a fresh count (a refusal that never came, seen once in a whole run).
    g = await createGrpcTestApp({ env: { OPENWOP_RATE_LIMIT_WRITE: '2/3600s', OPENWOP_RATE_LIMIT_PUBLIC: '3/3600s' } });
    await installChains(g.t, 'default', 'vendor.test.grpc', { 'vendor.test.grpc.chain': noopChain(1) });
  });

  afterAll(async () => {
    await g?.close();
  });

  it('a credential over its write budget gets RESOURCE_EXHAUSTED with retry-after, sharing the budget with REST', async () => {
    const token = await g.t.key({ scopes: ['runs:create'] });
    expect((await g.t.http('POST', '/v1/runs', { token, body: { workflowId: 'vendor.test.grpc.chain' } })).status).toBe(201);
    expect((await g.engine.call('CreateRun', { workflowId: 'vendor.test.grpc.chain' }, metadata(token))).ok).toBe(true);
    const e = refused(await g.engine.call('CreateRun', { workflowId: 'vendor.test.grpc.chain' }, metadata(token)));
    expect(e.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(e.envelope).toMatchObject({ error: 'rate_limited', details: { scope: 'key', class: 'write', limit: 2, windowMs: 3_600_000 } });
    expect(Number(e.metadata.get('retry-after')[0])).toBeGreaterThanOrEqual(1);
    const rest = await g.t.http('POST', '/v1/runs', { token, body: { workflowId: 'vendor.test.grpc.chain' } });
    expect(rest.status).toBe(429);
  });

  it('GetCapabilities is public and counted per client address', async () => {
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await g.engine.call('GetCapabilities', {}));
    expect(results.slice(0, 3).every((r) => r.ok)).toBe(true);
    const e = refused(results[3]);
    expect([e.code, e.envelope?.error, e.envelope?.details?.scope]).toEqual([grpc.status.RESOURCE_EXHAUSTED, 'rate_limited', 'global']);
  });
});
