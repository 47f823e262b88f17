/**
 * RFC 0064 toolHooks.prePostEvents over RFC 0076 §B ctx.http.safeFetch: every fetch a run makes is bracketed in the
 * run's durable log by `agent.toolCalled {transport: "http", callId, argsHash, principal}` and the
 * `agent.toolReturned` with the same `callId` (refused fetches included), content-free; the safe-fetch seam answers
 * the same pair inline, the safe-fetch-run seam runs the fetch inside a real run.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestApp, TestApp } from '../support/test-app';
import { expectSchemaValid, installChains, runEvents, TestEvent, waitForStatus } from './run-kit';

const METADATA = 'http://169.254.169.254/latest/meta-data/';

/** The audit pairs of a run's log, each `[toolCalled, toolReturned]` matched by callId. */
function pairs(events: TestEvent[]): Array<[TestEvent, TestEvent | undefined]> {
  const called = events.filter((e) => e.type === 'agent.toolCalled');
  return called.map((c) => [c, events.find((e) => e.type === 'agent.toolReturned' && e.payload.callId === c.payload.callId)]);
}

describe('runs: the audit pair of ctx.http.safeFetch', () => {
  let t: TestApp;
  let key: string;
  let server: http.Server;
  let base: string;

  beforeAll(async () => {
    server = http.createServer((q, s) => (q.url === '/secret-page' ? s.end('response-body-text') : ((s.statusCode = 404), s.end())));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_WEBHOOK_ALLOW_PRIVATE: 'true', OPENWOP_WEBHOOK_ALLOWED_PORTS: String(port) } });
    key = await t.key({ scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'default', 'vendor.test.http-chains', {
      'vendor.test.http-twice': {
        nodes: [
          { id: 'a', typeId: 'core.http.request', config: { url: `${base}/secret-page?token=q-secret` } },
          { id: 'b', typeId: 'core.http.request', config: { url: `${base}/secret-page`, method: 'post', body: 'request-body-text' } },
        ],
        edges: [{ from: 'a', to: 'b' }],
      },
    });
  });

  afterAll(async () => {
    await t?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  it('advertises toolHooks.prePostEvents beside httpClient.safeFetch', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.toolHooks).toEqual({ supported: true, prePostEvents: true });
    expect(d.body.httpClient.safeFetch).toEqual({ supported: true });
  });

  it('a refused fetch inside a run leaves a durable pair: forbidden, never started, same callId, caused by the call', async () => {
    const r = await t.http('POST', '/v1/host/sample/http/safe-fetch-run', { token: key, body: { url: METADATA } });
    expect([r.status, r.body.outcome, r.body.status]).toEqual([200, 'blocked', 'failed']);
    const events = await runEvents(t, key, r.body.runId);
    expectSchemaValid(events);
    const all = pairs(events);
    expect(all).toHaveLength(1);
    const [called, returned] = all[0];
    expect(called.payload).toEqual({ agentId: 'openwop-host.run-engine', toolName: 'ctx.http.safeFetch', callId: expect.any(String), argsHash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), principal: expect.any(String), transport: 'http' });
    expect(returned?.payload).toEqual({ agentId: 'openwop-host.run-engine', toolName: 'ctx.http.safeFetch', callId: called.payload.callId, status: 'forbidden', error: { code: 'safe_fetch_ssrf', message: expect.any(String) } });
    expect((returned as unknown as { causationId?: string }).causationId ?? called.eventId).toBe(called.eventId);
    expect(returned!.sequence).toBeGreaterThan(called.sequence);
    // Nothing of the URL is in the log's pair.
    expect(JSON.stringify([called.payload, returned!.payload])).not.toContain('169.254');
    const run = await waitForStatus(t, key, r.body.runId, ['failed']);
    expect(run.error?.code).toBe('safe_fetch_ssrf');
  });

  it('each answered fetch of a run has its own pair (ok, with a duration), and no content of the call or its answer', async () => {
    const run = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.http-twice' } });
    const done = await waitForStatus(t, key, run.body.runId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    const events = await runEvents(t, key, run.body.runId);
    expectSchemaValid(events);
    const all = pairs(events);
    expect(all).toHaveLength(2);
    expect(new Set(all.map(([c]) => c.payload.callId)).size).toBe(2);
    for (const [c, ret] of all) {
      expect(c.payload.transport).toBe('http');
      expect(ret?.payload).toMatchObject({ callId: c.payload.callId, status: 'ok', durationMs: expect.any(Number) });
    }
    // Different calls (method, URL) hash differently.
    expect(all[0][0].payload.argsHash).not.toBe(all[1][0].payload.argsHash);
    const text = JSON.stringify(all.map(([c, ret]) => [c.payload, ret?.payload]));
    for (const content of ['q-secret', 'secret-page', 'request-body-text', 'response-body-text']) expect(text).not.toContain(content);
  });

  it('the run seam answers fetched for an answered call, and the pair is in that run\'s log', async () => {
    const r = await t.http('POST', '/v1/host/sample/http/safe-fetch-run', { token: key, body: { url: `${base}/secret-page` } });
    expect([r.status, r.body.outcome]).toEqual([200, 'fetched']);
    const [[called, returned]] = pairs(await runEvents(t, key, r.body.runId));
    expect([called.payload.transport, returned?.payload.status]).toEqual(['http', 'ok']);
  });

  it('the safe-fetch seam answers the pair its call makes (blocked and fetched)', async () => {
    const blocked = await t.http('POST', '/v1/host/sample/http/safe-fetch', { token: key, body: { url: METADATA } });
    expect(blocked.body).toMatchObject({ outcome: 'blocked', blocked: 'ssrf', toolCalled: { transport: 'http', callId: expect.any(String) }, toolReturned: { status: 'forbidden' } });
    expect(blocked.body.toolReturned.callId).toBe(blocked.body.toolCalled.callId);
    const fetched = await t.http('POST', '/v1/host/sample/http/safe-fetch', { token: key, body: { url: `${base}/secret-page` } });
    expect(fetched.body).toMatchObject({ outcome: 'fetched', status: 200, toolCalled: { transport: 'http' }, toolReturned: { status: 'ok' } });
  });

  it('refuses a malformed run-seam body, and a core.http.request node without a url', async () => {
    for (const body of [{}, { url: 7 }, { url: 'x'.repeat(2049) }]) {
      const r = await t.http('POST', '/v1/host/sample/http/safe-fetch-run', { token: key, body });
      expect([r.status, r.body.error]).toEqual([400, 'validation_error']);
    }
    await installChains(t, 'default', 'vendor.test.http-bad', { 'vendor.test.http-bad': { nodes: [{ id: 'a', typeId: 'core.http.request', config: { method: 'TRACE' } }] } });
    const run = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.http-bad' } });
    expect([run.status, run.body.error, run.body.details.problems]).toEqual([422, 'workflow_invalid', ['config.url must be a non-empty string', 'config.method must be one of GET, HEAD, POST, PUT, PATCH, DELETE']]);
  });
});
