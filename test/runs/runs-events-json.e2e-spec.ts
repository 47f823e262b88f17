/** `GET /v1/runs/{runId}/events` read as JSON by a client that asks for JSON and not for an event stream. */
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain, waitForStatus } from './run-kit';

describe('runs: the events of a run as JSON', () => {
  let t: TestApp;
  let key: string;
  let runId: string;

  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key({ scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'default', 'vendor.test.events-json', { 'vendor.test.events-json': noopChain(2) });
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.events-json' } });
    runId = r.body.runId;
    await waitForStatus(t, key, runId, ['completed']);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('answers {events}: the whole log as the long poll reads it, or what a named stream mode admits, without following', async () => {
    const res = await t.http('GET', `/v1/runs/${runId}/events`, { token: key, headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const poll = await t.http('GET', `/v1/runs/${runId}/events/poll?lastSequence=0`, { token: key });
    expect(res.body.events).toEqual(poll.body.events);
    expect(res.body.events.map((e: { type: string }) => e.type)).toContain('node.started');
    const updates = await t.http('GET', `/v1/runs/${runId}/events?streamMode=updates`, { token: key, headers: { accept: 'application/json' } });
    expect(updates.body.events.map((e: { type: string }) => e.type)).toEqual(['run.started', 'node.completed', 'node.completed', 'run.completed']);
    const debug = await t.http('GET', `/v1/runs/${runId}/events?streamMode=debug&lastSequence=1`, { token: key, headers: { accept: 'application/json' } });
    expect(debug.body.events[0].sequence).toBe(2);
    expect(debug.body.events.map((e: { type: string }) => e.type)).toContain('node.started');
  });

  it('keeps the event stream for a client that asks for it (or names no type)', async () => {
    for (const accept of ['text/event-stream', 'application/json, text/event-stream', '*/*']) {
      const res = await t.http('GET', `/v1/runs/${runId}/events`, { token: key, headers: { accept } });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
      expect(res.text).toContain('event: run.completed');
    }
  });

  it('refuses a bad stream mode and an unknown run the same way as the stream does', async () => {
    const bad = await t.http('GET', `/v1/runs/${runId}/events?streamMode=bogus`, { token: key, headers: { accept: 'application/json' } });
    expect([bad.status, bad.body.error]).toEqual([400, 'unsupported_stream_mode']);
    const unknown = await t.http('GET', '/v1/runs/00000000-0000-4000-8000-000000000000/events', { token: key, headers: { accept: 'application/json' } });
    expect([unknown.status, unknown.body.error]).toEqual([404, 'not_found']);
  });
});
