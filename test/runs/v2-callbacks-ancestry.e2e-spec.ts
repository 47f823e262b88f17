/**
 * Major-2 run surfaces of issue 37: interrupt callback delivery (`createRun.callbackUrl`, RFC 0196:
 * refused at create where the webhooks' egress guard refuses it, POSTed a notification of each
 * interrupt its run opens), `getRunAncestry` (a created run and a fork have no parent, a
 * `core.subWorkflow` child has its parent; `/v1` does not serve it) and `streamMode` on the poll.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestApp, TestApp } from '../support/test-app';
import { waitForStatus } from './run-kit';

const V2 = { 'openwop-version': '2.0' };
const bare = (id: string) => id.slice(id.lastIndexOf('/') + 1);

describe('guarded callbackUrl, ancestry and the poll stream modes (majors 1 and 2)', () => {
  let t: TestApp;
  let key: string;
  let other: string;

  beforeAll(async () => {
    // The webhooks' guard opened for local receivers: the callback guard stays closed (its own setting).
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_PROTOCOL_MAJORS: '1,2', OPENWOP_WEBHOOK_ALLOW_PRIVATE: 'true', OPENWOP_WEBHOOK_ALLOWED_PORTS: '443,1024-65535' } });
    key = await t.key({ tenant: 'acme', scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    other = await t.key({ tenant: 'globex', scopes: ['runs:create', 'runs:read'] });
  });
  afterAll(() => t?.close());

  it('the v2 root advertises callback delivery and the ancestry endpoint', async () => {
    const root = await t.http('GET', '/.well-known/openwop', { headers: V2 });
    expect(root.body.interrupt.callbackDelivery).toBe(true);
    expect(root.body.multiAgent).toEqual({ status: 'experimental', since: '2.0', until: expect.any(String), witness: 'witnessable-gated', executionModel: { crossHostCausation: { hostId: 'openwop-host', ancestryEndpointSupported: true } } });
    // The v1 document claims no multi-agent execution model.
    expect((await t.http('GET', '/.well-known/openwop')).body.multiAgent).toBeUndefined();
  });

  it.each([
    'https://127.0.0.1/openwop-callback-probe',
    'https://169.254.169.254/latest/meta-data/',
    'https://[::ffff:7f00:1]/openwop-callback-probe',
    'https://localhost/cb',
    'http://hooks.example.com/cb',
    'https://hooks.example.com:22/cb',
  ])('refuses callbackUrl %s at create, at both majors, and creates no run', async (url) => {
    for (const [path, headers] of [['/runs', V2], ['/v1/runs', {}]] as const) {
      const r = await t.http('POST', path, { token: key, body: { workflowId: 'conformance-noop', callbackUrl: url }, headers });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('validation_error');
      expect(r.body.details.field).toBe('callbackUrl');
    }
    const list = await t.http('GET', '/v1/runs', { token: key });
    expect(list.body.runs ?? []).toHaveLength(0);
  });

  it('accepts a public https callbackUrl and keeps it with the run', async () => {
    const r = await t.http('POST', '/runs', { token: key, body: { workflowId: 'conformance-noop', callbackUrl: 'https://203.0.114.7/cb' }, headers: V2 });
    expect(r.status).toBe(201);
    await waitForStatus(t, key, bare(r.body.runId), ['completed']);
  });

  it('ancestry: null for a created run and for its branch fork, the parent for a core.subWorkflow child; tenant-scoped; not at /v1', async () => {
    const created = await t.http('POST', '/runs', { token: key, body: { workflowId: 'conformance-noop' }, headers: V2 });
    const runId = created.body.runId as string;
    await waitForStatus(t, key, bare(runId), ['completed']);
    const own = await t.http('GET', `/runs/${encodeURIComponent(runId)}/ancestry`, { token: key, headers: V2 });
    expect(own.status).toBe(200);
    expect(own.body).toEqual({ runId, hostId: 'openwop-host', parent: null });

    const fork = await t.http('POST', `/runs/${encodeURIComponent(runId)}:fork`, { token: key, body: { mode: 'branch', fromSeq: 0 }, headers: V2 });
    expect(fork.status).toBe(201);
    const anc = await t.http('GET', `/runs/${encodeURIComponent(fork.body.runId)}/ancestry`, { token: key, headers: V2 });
    expect(anc.body).toEqual({ runId: fork.body.runId, hostId: 'openwop-host', parent: null });

    const parent = await t.http('POST', '/runs', { token: key, body: { workflowId: 'conformance-subworkflow-parent' }, headers: V2 });
    const parentId = parent.body.runId as string;
    const done = await waitForStatus(t, key, bare(parentId), ['completed']);
    const child = (done.childRuns as Array<{ runId: string }>)[0].runId;
    const childAnc = await t.http('GET', `/runs/acme~2F${child}/ancestry`, { token: key, headers: V2 });
    expect(childAnc.body).toEqual({ runId: `acme/${child}`, hostId: 'openwop-host', parent: { runId: parentId, hostId: 'openwop-host', cause: 'core.subWorkflow' } });

    // Another tenant: its bound id is refused, the bare id is unknown to it.
    expect((await t.http('GET', `/runs/${encodeURIComponent(runId)}/ancestry`, { token: other, headers: V2 })).status).toBe(403);
    const foreign = await t.http('GET', `/runs/${bare(runId)}/ancestry`, { token: other, headers: V2 });
    expect([foreign.status, foreign.body.error]).toEqual([404, 'not_found']);
    // Major 1 gates it on the whole multi-agent execution model, which this host does not claim.
    const v1 = await t.http('GET', `/v1/runs/${bare(runId)}/ancestry`, { token: key });
    expect([v1.status, v1.body]).toEqual([404, { error: 'not_found', message: 'No such route.' }]);
  });

  it('the poll takes streamMode: debug is every event, updates leaves node.started out, values and unknown modes are refused', async () => {
    const created = await t.http('POST', '/runs', { token: key, body: { workflowId: 'conformance-multi-node' }, headers: V2 });
    const runId = encodeURIComponent(created.body.runId as string);
    await waitForStatus(t, key, bare(created.body.runId), ['completed']);
    const all = await t.http('GET', `/runs/${runId}/events/poll?timeout=1`, { token: key, headers: V2 });
    const debug = await t.http('GET', `/runs/${runId}/events/poll?timeout=1&streamMode=debug`, { token: key, headers: V2 });
    expect(debug.status).toBe(200);
    expect(debug.body).toEqual(all.body);
    const updates = await t.http('GET', `/runs/${runId}/events/poll?timeout=1&streamMode=updates`, { token: key, headers: V2 });
    const types = (updates.body.events as Array<{ type: string }>).map((e) => e.type);
    expect(types).toContain('node.completed');
    expect(types).not.toContain('node.started');
    // The cursor still names the log's end.
    expect(updates.body.lastSequence).toBe(all.body.lastSequence);
    for (const mode of ['values', 'bogus']) {
      const r = await t.http('GET', `/runs/${runId}/events/poll?timeout=1&streamMode=${mode}`, { token: key, headers: V2 });
      expect([r.status, r.body.error]).toEqual([400, 'unsupported_stream_mode']);
    }
    const v1 = await t.http('GET', `/v1/runs/${bare(created.body.runId)}/events/poll?timeout=0&streamMode=updates`, { token: key });
    expect((v1.body.events as Array<{ type: string }>).some((e) => e.type === 'node.started')).toBe(false);
  });
});

describe('interrupt callbacks are delivered (OPENWOP_CALLBACK_ALLOW_PRIVATE=true)', () => {
  let t: TestApp;
  let key: string;
  let server: http.Server;
  const received: Array<{ headers: http.IncomingHttpHeaders; body: Record<string, unknown> }> = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let data = '';
      req.on('data', (c) => (data += c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: JSON.parse(data) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_PROTOCOL_MAJORS: '1,2', OPENWOP_CALLBACK_ALLOW_PRIVATE: 'true', OPENWOP_WEBHOOK_ALLOWED_PORTS: '443,1024-65535' } });
    key = await t.key({ tenant: 'acme', scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
  });
  afterAll(async () => {
    await t?.close();
    server?.close();
  });

  it('POSTs the opened interrupt to callbackUrl; its token resolves the run', async () => {
    const port = (server.address() as AddressInfo).port;
    const r = await t.http('POST', '/runs', { token: key, body: { workflowId: 'conformance-interrupt-external-event', callbackUrl: `http://127.0.0.1:${port}/cb` }, headers: V2 });
    expect(r.status).toBe(201);
    const runId = r.body.runId as string;
    await waitForStatus(t, key, bare(runId), ['waiting-external']);
    for (let i = 0; i < 100 && !received.length; i++) await new Promise((res) => setTimeout(res, 100));
    expect(received).toHaveLength(1);
    const { headers, body } = received[0];
    expect(headers['openwop-event-type']).toBe('interrupt.requested');
    expect(body).toMatchObject({ type: 'interrupt.requested', runId, kind: 'external-event', nodeId: expect.any(String), interruptId: expect.stringMatching(/^acme\//), token: expect.stringMatching(/^ow2\.hs256\./), tokenUrl: `/interrupts/${String(body.token)}` });
    // The notification carries no authority of its own: the receiver reads the interrupt back by its token.
    const inspected = await t.http('GET', String(body.tokenUrl), { headers: V2 });
    expect(inspected.status).toBe(200);
    expect(inspected.body.kind).toBe('external-event');
  });

  it('a port outside the allowed list stays refused with the relaxation', async () => {
    const res = await t.http('POST', '/runs', { token: key, body: { workflowId: 'conformance-noop', callbackUrl: 'http://127.0.0.1:80/cb' }, headers: V2 });
    expect([res.status, res.body.details?.field]).toEqual([400, 'callbackUrl']);
  });
});
