/**
 * Run control and history: SSE stream modes and bufferMs batching, the long poll, bulk cancel, the
 * workflow definition read, the run artifact route's auth order, and the conditional run read.
 */
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain, runEvents, waitForStatus } from './run-kit';

interface Frame {
  id?: number;
  event: string;
  data: string;
}

/** The frames of a finished SSE answer. */
function frames(text: string): Frame[] {
  return text
    .split('\n\n')
    .filter((f) => f.trim() && !f.startsWith(':'))
    .map((f) => {
      const id = /^id: (\d+)$/m.exec(f);
      return { ...(id ? { id: Number(id[1]) } : {}), event: /^event: (.+)$/m.exec(f)![1], data: /^data: (.+)$/m.exec(f)![1] };
    });
}

describe('runs: control and history', () => {
  let t: TestApp;
  let key: string;
  let stranger: string;

  beforeAll(async () => {
    t = await createTestApp({ openApi: false });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel', 'manifest:read', 'artifacts:read'] });
    stranger = await t.key({ tenant: 'stranger', scopes: ['runs:create', 'runs:read', 'runs:cancel', 'manifest:read', 'artifacts:read'] });
    await installChains(t, 'default', 'vendor.test.control', {
      'test-chain': noopChain(3),
      'test-slow': { nodes: [{ id: 'a', typeId: 'core.noop' }, { id: 'wait', typeId: 'core.delay', config: { ms: '{{inputs.ms}}', defaultMs: 20_000 } }], edges: [{ from: 'a', to: 'wait' }] },
      'test-fanout': {
        nodes: [
          { id: 'src', typeId: 'core.noop', name: 'Source' },
          { id: 'left', typeId: 'core.noop' },
          { id: 'right', typeId: 'core.delay', config: { seconds: 0.01 } },
          { id: 'join', typeId: 'core.noop' },
        ],
        edges: [{ from: 'src', to: 'left' }, { from: 'src', to: 'right' }, { from: 'left', to: 'join' }, { from: 'right.delayedMs', to: 'join.waited' }],
      },
    });
    await installChains(t, 'stranger', 'vendor.test.control', { 'test-chain': noopChain(1) });
  });

  afterAll(async () => {
    await t?.close();
  });

  const start = async (workflowId: string, inputs: Record<string, unknown> = {}, token = key) => {
    const r = await t.http('POST', '/v1/runs', { token, body: { workflowId, inputs } });
    expect(r.status).toBe(201);
    return r.body.runId as string;
  };
  const finished = async (workflowId = 'test-chain') => {
    const runId = await start(workflowId);
    await waitForStatus(t, key, runId, ['completed']);
    return runId;
  };
  const sse = (runId: string, query: string, headers: Record<string, string> = {}) => t.http('GET', `/v1/runs/${runId}/events${query}`, { token: key, headers: { accept: 'text/event-stream', ...headers } });

  describe('GET /v1/runs/{runId}/events stream modes', () => {
    it('updates (the default) leaves out node.started; debug carries every event', async () => {
      const runId = await finished();
      const all = (await runEvents(t, key, runId)).map((e) => e.type);
      const byDefault = frames((await sse(runId, '')).text).map((f) => f.event);
      const updates = frames((await sse(runId, '?streamMode=updates')).text).map((f) => f.event);
      const debug = frames((await sse(runId, '?streamMode=debug')).text).map((f) => f.event);
      expect(debug).toEqual(all);
      expect(updates).toEqual(all.filter((x) => x !== 'node.started'));
      expect(byDefault).toEqual(updates);
      expect(updates).toEqual(['run.started', 'node.completed', 'node.completed', 'node.completed', 'run.completed']);
    });

    it('a mixed list is the union of its modes; messages alone is empty on a run without AI nodes', async () => {
      const runId = await finished();
      const all = (await runEvents(t, key, runId)).map((e) => e.type);
      expect(frames((await sse(runId, '?streamMode=updates,debug')).text).map((f) => f.event)).toEqual(all);
      expect(frames((await sse(runId, '?streamMode=updates,messages')).text).map((f) => f.event)).toEqual(all.filter((x) => x !== 'node.started'));
      const messages = await sse(runId, '?streamMode=messages');
      expect(messages.status).toBe(200);
      expect(frames(messages.text)).toEqual([]);
    });

    it('values sends RunSnapshot frames, and a baseline snapshot first on resume', async () => {
      const runId = await finished();
      const values = frames((await sse(runId, '?streamMode=values')).text);
      expect(values.length).toBeGreaterThan(0);
      expect(values.every((f) => f.event === 'state.snapshot')).toBe(true);
      const last = JSON.parse(values[values.length - 1].data);
      expect(SchemaRegistry.shared().validate('run-snapshot', last)).toEqual([]);
      expect(last).toMatchObject({ runId, status: 'completed' });
      const resumed = frames((await sse(runId, '?streamMode=values', { 'last-event-id': '3' })).text);
      expect(resumed[0]).toMatchObject({ event: 'state.snapshot' });
      expect(resumed[0].id).toBeUndefined();
    });

    it('rejects unknown modes, values combined, and empty entries with unsupported_stream_mode', async () => {
      const runId = await finished();
      for (const mode of ['does-not-exist', 'values,updates', 'updates,bogus', 'updates,']) {
        const r = await sse(runId, `?streamMode=${encodeURIComponent(mode)}`);
        expect(r.status).toBe(400);
        expect(r.body).toEqual({ error: 'unsupported_stream_mode', message: expect.any(String), details: { supported: ['values', 'updates', 'messages', 'debug'] } });
      }
      // Checked before the run: an unknown run with a bad mode is still 400.
      expect((await sse('00000000-0000-4000-8000-000000000000', '?streamMode=nope')).status).toBe(400);
    });

    it('bufferMs batches events into event: batch frames (id = highest sequence); 0 does not batch', async () => {
      const runId = await finished();
      const batched = frames((await sse(runId, '?bufferMs=200')).text);
      expect(batched.length).toBeGreaterThan(0);
      expect(batched.every((f) => f.event === 'batch')).toBe(true);
      const flat = batched.flatMap((f) => JSON.parse(f.data) as Array<{ type: string; sequence: number }>);
      expect(flat.map((e) => e.type)).toEqual(['run.started', 'node.completed', 'node.completed', 'node.completed', 'run.completed']);
      for (const f of batched) expect(f.id).toBe(Math.max(...(JSON.parse(f.data) as Array<{ sequence: number }>).map((e) => e.sequence)));
      expect(frames((await sse(runId, '?bufferMs=0')).text).some((f) => f.event === 'batch')).toBe(false);
    });

    it('bufferMs flushes on the terminal event, not at the end of the window', async () => {
      const runId = await start('test-slow', { ms: 300 });
      const began = Date.now();
      const r = await sse(runId, '?bufferMs=5000');
      expect(Date.now() - began).toBeLessThan(4000);
      const flat = frames(r.text).flatMap((f) => JSON.parse(f.data) as Array<{ type: string }>);
      expect(flat[flat.length - 1].type).toBe('run.completed');
    });

    it('rejects bufferMs outside 0..5000 and malformed', async () => {
      const runId = await finished();
      for (const v of ['5001', '99999', '-1', '1.5', 'soon']) {
        const r = await sse(runId, `?bufferMs=${v}`);
        expect(r.status).toBe(400);
        expect(r.body.error).toBe('validation_error');
      }
    });
  });

  describe('GET /v1/runs/{runId}/events/poll', () => {
    it('answers a finished run at once with isComplete, also past its last event', async () => {
      const runId = await finished();
      const all = await t.http('GET', `/v1/runs/${runId}/events/poll`, { token: key });
      expect(all.body.isComplete).toBe(true);
      expect(all.body.lastSequence).toBe(all.body.events.length);
      const began = Date.now();
      const after = await t.http('GET', `/v1/runs/${runId}/events/poll?lastSequence=${all.body.lastSequence}&timeout=20`, { token: key });
      expect(Date.now() - began).toBeLessThan(2000);
      expect(after.body).toEqual({ events: [], isComplete: true, lastSequence: all.body.lastSequence });
    });

    it('waits for the next event and answers as soon as it is appended', async () => {
      const runId = await start('test-slow', { ms: 1500 });
      // Wait until the delay node is in flight, then poll past everything written so far.
      let seen: { events: Array<{ type: string; sequence: number }>; lastSequence: number };
      for (;;) {
        seen = (await t.http('GET', `/v1/runs/${runId}/events/poll?timeout=1`, { token: key })).body;
        if (seen.events.some((e) => e.type === 'node.started' && (e as { nodeId?: string }).nodeId === 'wait')) break;
      }
      const began = Date.now();
      const next = await t.http('GET', `/v1/runs/${runId}/events/poll?lastSequence=${seen.lastSequence}&timeout=20`, { token: key });
      const waited = Date.now() - began;
      expect(next.status).toBe(200);
      expect(next.body.events.map((e: { type: string }) => e.type)).toEqual(['node.completed', 'run.completed'].slice(0, next.body.events.length));
      expect(next.body.events[0].sequence).toBe(seen.lastSequence + 1);
      expect(waited).toBeGreaterThan(500); // it really waited for the delay to end...
      expect(waited).toBeLessThan(6000); // ...and did not sit out the whole timeout
    });

    it('answers an empty list after the timeout on a live run', async () => {
      const runId = await start('test-slow');
      await waitForStatus(t, key, runId, ['running']);
      const last = (await runEvents(t, key, runId)).length;
      const began = Date.now();
      const r = await t.http('GET', `/v1/runs/${runId}/events/poll?lastSequence=${last + 50}&timeout=1`, { token: key });
      expect(Date.now() - began).toBeGreaterThanOrEqual(900);
      expect(r.body).toEqual({ events: [], isComplete: false, lastSequence: last + 50 });
      await t.http('POST', `/v1/runs/${runId}/cancel`, { token: key, body: {} });
    });

    it('rejects a timeout over 60 s and another tenant reads 404', async () => {
      const runId = await finished();
      expect((await t.http('GET', `/v1/runs/${runId}/events/poll?timeout=61`, { token: key })).body.error).toBe('validation_error');
      expect((await t.http('GET', `/v1/runs/${runId}/events/poll?timeout=60`, { token: key })).status).toBe(200);
      expect((await t.http('GET', `/v1/runs/${runId}/events/poll`, { token: stranger })).status).toBe(404);
    });
  });

  describe('POST /v1/runs:bulk-cancel', () => {
    it('cancels each id independently, in request order', async () => {
      const live = await start('test-slow');
      await waitForStatus(t, key, live, ['running']);
      const done = await finished();
      const foreign = await start('test-chain', {}, stranger);
      const ids = [live, 'run-does-not-exist-xxxxxxxx', done, foreign];
      const r = await t.http('POST', '/v1/runs:bulk-cancel', { token: key, body: { runIds: ids, reason: 'bulk test' } });
      expect(r.status).toBe(200);
      expect(r.body.results.map((x: { runId: string }) => x.runId)).toEqual(ids);
      expect(r.body.results[0]).toEqual({ runId: live, ok: true, status: expect.stringMatching(/^(cancelling|cancelled)$/) });
      expect(r.body.results[1]).toEqual({ runId: ids[1], ok: false, error: { code: 'not_found', message: expect.any(String) } });
      expect(r.body.results[2]).toEqual({ runId: done, ok: false, error: { code: 'run_terminal', message: expect.any(String), details: { runStatus: 'completed' } } });
      expect(r.body.results[3]).toMatchObject({ ok: false, error: { code: 'not_found' } });
      const cancelled = await waitForStatus(t, key, live, ['cancelled']);
      expect(cancelled.status).toBe('cancelled');
      const events = await runEvents(t, key, live);
      // The reason reaches run.cancelled also when the cancel lands while a node runs (the engine writes it).
      expect(events[events.length - 1]).toMatchObject({ type: 'run.cancelled', payload: { reason: 'bulk test' } });
      // Idempotent: the cancelled run is ok again.
      const again = await t.http('POST', '/v1/runs:bulk-cancel', { token: key, body: { runIds: [live, live] } });
      expect(again.body.results).toEqual([{ runId: live, ok: true, status: 'cancelled' }, { runId: live, ok: true, status: 'cancelled' }]);
    });

    it('rejects an empty, missing, oversized or malformed runIds with validation_error', async () => {
      const post = (body: unknown) => t.http('POST', '/v1/runs:bulk-cancel', { token: key, body });
      for (const body of [{ runIds: [] }, {}, { runIds: 'x' }, { runIds: [1] }, { runIds: [''] }, { runIds: ['a'], extra: true }, { runIds: ['a'], reason: 7 }]) {
        const r = await post(body);
        expect(r.status).toBe(400);
        expect(r.body.error).toBe('validation_error');
      }
      const over = await post({ runIds: Array.from({ length: 101 }, (_, i) => `run-${i}`) });
      expect(over.status).toBe(400);
      expect(over.body).toMatchObject({ error: 'validation_error', details: { maxRunIds: 100 } });
      expect((await post({ runIds: Array.from({ length: 100 }, (_, i) => `run-${i}`) })).status).toBe(200);
    });

    it('needs runs:cancel', async () => {
      const reader = await t.key({ scopes: ['runs:read'] });
      expect((await t.http('POST', '/v1/runs:bulk-cancel', { token: reader, body: { runIds: ['a'] } })).status).toBe(403);
      expect((await t.http('POST', '/v1/runs:bulk-cancel', { body: { runIds: ['a'] } })).status).toBe(401);
    });
  });

  describe('GET /v1/workflows/{workflowId}', () => {
    it('answers the installed chain as a schema-valid WorkflowDefinition', async () => {
      const r = await t.http('GET', '/v1/workflows/test-fanout', { token: key });
      expect(r.status).toBe(200);
      expect(SchemaRegistry.shared().validate('workflow-definition', r.body)).toEqual([]);
      expect(r.body).toMatchObject({ id: 'test-fanout', name: 'test-fanout', version: '1.0.0', triggers: [{ id: 'manual', type: 'manual' }] });
      expect(r.body.nodes.map((n: { id: string; name: string }) => [n.id, n.name])).toEqual([['src', 'Source'], ['left', 'left'], ['right', 'right'], ['join', 'join']]);
      expect(r.body.nodes.map((n: { position: { x: number } }) => n.position.x)).toEqual([0, 240, 240, 480]);
      expect(r.body.edges).toContainEqual({ id: 'right.delayedMs->join.waited', sourceNodeId: 'right', targetNodeId: 'join', sourceOutput: 'delayedMs', targetInput: 'waited' });
      expect((await t.http('GET', '/v1/workflows/workflow:test-fanout', { token: key })).body.id).toBe('workflow:test-fanout');
    });

    it('is tenant-scoped and needs manifest:read, or runs:create (who may start a workflow may read it)', async () => {
      expect((await t.http('GET', '/v1/workflows/test-fanout', { token: stranger })).status).toBe(404);
      expect((await t.http('GET', '/v1/workflows/no-such-chain', { token: key })).body.error).toBe('not_found');
      const reader = await t.key({ scopes: ['runs:read'] });
      expect((await t.http('GET', '/v1/workflows/test-fanout', { token: reader })).status).toBe(403);
      const starter = await t.key({ scopes: ['runs:create'] });
      expect((await t.http('GET', '/v1/workflows/test-fanout', { token: starter })).status).toBe(200);
      expect((await t.http('GET', '/v1/workflows/test-fanout')).status).toBe(401);
    });
  });

  describe('GET /v1/runs/{runId}/artifacts/{artifactId}', () => {
    it('is 401 without a credential, before anything is looked up', async () => {
      const r = await t.http('GET', '/v1/runs/any-run/artifacts/any-artifact');
      expect(r.status).toBe(401);
      expect(r.body.error).toBe('unauthenticated');
    });

    it('is 404 for an own run (no executor produces artifacts), a foreign and an unknown one; 403 without artifacts:read', async () => {
      const runId = await finished();
      expect((await t.http('GET', `/v1/runs/${runId}/artifacts/a1`, { token: key })).body).toMatchObject({ error: 'not_found' });
      expect((await t.http('GET', `/v1/runs/${runId}/artifacts/a1`, { token: stranger })).status).toBe(404);
      expect((await t.http('GET', '/v1/runs/nope/artifacts/a1', { token: key })).status).toBe(404);
      const reader = await t.key({ scopes: ['runs:read'] });
      expect((await t.http('GET', `/v1/runs/${runId}/artifacts/a1`, { token: reader })).status).toBe(403);
    });
  });

  describe('conditional GET /v1/runs/{runId}', () => {
    it('answers a strong ETag; If-None-Match with it is 304 with no body until the run changes', async () => {
      const runId = await start('test-slow');
      await waitForStatus(t, key, runId, ['running']);
      const first = await t.http('GET', `/v1/runs/${runId}`, { token: key });
      const tag = String(first.headers.etag);
      expect(tag).toMatch(/^"\d+-[A-Za-z0-9_-]+"$/);
      expect(first.body.runId).toBe(runId);
      const same = await t.http('GET', `/v1/runs/${runId}`, { token: key, headers: { 'if-none-match': tag } });
      expect(same.status).toBe(304);
      expect(same.text).toBe('');
      expect(same.headers.etag).toBe(tag);
      expect((await t.http('GET', `/v1/runs/${runId}`, { token: key, headers: { 'if-none-match': `"x", W/${tag}` } })).status).toBe(304);
      expect((await t.http('GET', `/v1/runs/${runId}`, { token: key, headers: { 'if-none-match': '"other"' } })).status).toBe(200);
      // A transition (here cancelling, which writes no event by itself) changes the tag.
      await t.http('POST', `/v1/runs/${runId}/cancel`, { token: key, body: {} });
      const after = await t.http('GET', `/v1/runs/${runId}`, { token: key, headers: { 'if-none-match': tag } });
      expect(after.status).toBe(200);
      expect(after.headers.etag).not.toBe(tag);
      // Unknown and foreign ids stay 404 whatever the condition.
      expect((await t.http('GET', `/v1/runs/${runId}`, { token: stranger, headers: { 'if-none-match': '*' } })).status).toBe(404);
    });

    it('is advertised as restTransport.conditionalRunGet', async () => {
      expect((await t.http('GET', '/.well-known/openwop')).body.restTransport).toEqual({ conditionalRunGet: true });
    });
  });

  describe('POST /v1/runs/{runId}:pause and :resume', () => {
    const control = (runId: string, action: string, body: unknown = {}, headers: Record<string, string> = {}, token = key) => t.http('POST', `/v1/runs/${runId}:${action}`, { token, body, headers });
    const types = async (runId: string) => (await runEvents(t, key, runId)).map((e) => e.type);

    it('immediate: paused at once, holds no lease, 409 on a second pause unless the Idempotency-Key repeats; resume runs the node again', async () => {
      const runId = await start('test-slow', { ms: 1500 });
      await waitForStatus(t, key, runId, ['running']);
      for (;;) if ((await types(runId)).filter((x) => x === 'node.started').length === 2) break;
      const paused = await control(runId, 'pause', { reason: 'ops', drainPolicy: 'immediate' }, { 'idempotency-key': 'pause-1' });
      expect(paused.status).toBe(202);
      expect(paused.body).toEqual({ runId, status: 'paused', pausedAt: expect.any(String) });
      await waitForStatus(t, key, runId, ['paused'], 5000);
      const [row] = await t.ds.query(`SELECT "lease_owner", "lease_expires_at" FROM "run" WHERE "id" = $1`, [runId]);
      expect(row).toEqual({ lease_owner: null, lease_expires_at: null });
      const events = await runEvents(t, key, runId);
      expect(events[events.length - 1]).toMatchObject({ type: 'run.paused', payload: { drainPolicy: 'immediate', reason: 'ops' } });
      // The delay in flight was aborted, not completed (nothing is written for it).
      expect(events.filter((e) => e.nodeId === 'wait').map((e) => e.type)).toEqual(['node.started']);
      const again = await control(runId, 'pause', { drainPolicy: 'immediate' });
      expect(again.status).toBe(409);
      expect(again.body.details.runStatus).toBe('paused');
      const replay = await control(runId, 'pause', { reason: 'ops', drainPolicy: 'immediate' }, { 'idempotency-key': 'pause-1' });
      expect(replay.status).toBe(202);
      expect(replay.body).toEqual(paused.body);
      const resumed = await control(runId, 'resume', { reason: 'go' });
      expect(resumed.status).toBe(202);
      expect(resumed.body).toEqual({ runId, status: 'running', resumedAt: expect.any(String) });
      const done = await waitForStatus(t, key, runId, ['completed', 'failed'], 15_000);
      expect(done.status).toBe('completed');
      const after = await types(runId);
      expect(after.slice(after.indexOf('run.paused'))).toEqual(['run.paused', 'run.resumed', 'node.started', 'node.completed', 'run.completed']);
    });

    it('drain-current-node: the node in flight completes before run.paused; the run completes only after resume', async () => {
      const runId = await start('test-slow', { ms: 800 });
      for (;;) if ((await types(runId)).filter((x) => x === 'node.started').length === 2) break;
      expect((await control(runId, 'pause', { drainPolicy: 'drain-current-node' })).status).toBe(202);
      await waitForStatus(t, key, runId, ['paused'], 10_000);
      const seen = await types(runId);
      expect(seen.indexOf('node.completed', seen.lastIndexOf('node.started'))).toBeLessThan(seen.indexOf('run.paused'));
      expect(seen).not.toContain('run.completed');
      expect((await control(runId, 'resume')).status).toBe(202);
      expect((await waitForStatus(t, key, runId, ['completed', 'failed'])).status).toBe('completed');
      expect((await types(runId)).slice(-3)).toEqual(['run.paused', 'run.resumed', 'run.completed']);
    });

    it('a pending run (nobody executes it) pauses at once and starts from the beginning on resume', async () => {
      const runId = await start('test-chain');
      const r = await control(runId, 'pause', {});
      if (r.status === 202) {
        const s = await waitForStatus(t, key, runId, ['paused', 'completed'], 5000);
        if (s.status === 'paused') {
          expect((await control(runId, 'resume')).status).toBe(202);
          expect((await waitForStatus(t, key, runId, ['completed', 'failed'])).status).toBe('completed');
          expect((await types(runId)).filter((x) => x === 'run.started')).toHaveLength(1);
        }
      } else {
        // The run finished before the pause landed.
        expect(r.body.details.runStatus).toBe('completed');
      }
    });

    it('409 with details.runStatus on a running (resume) or finished (pause) run; 404, 400 and 403 like every route', async () => {
      const live = await start('test-slow');
      await waitForStatus(t, key, live, ['running']);
      const notPaused = await control(live, 'resume');
      expect(notPaused.status).toBe(409);
      expect(notPaused.body.details.runStatus).toBe('running');
      const done = await finished();
      const terminal = await control(done, 'pause', { drainPolicy: 'immediate' });
      expect(terminal.status).toBe(409);
      expect(terminal.body).toMatchObject({ error: 'run_terminal', details: { runStatus: 'completed' } });
      expect((await control('00000000-0000-4000-8000-000000000000', 'pause')).status).toBe(404);
      expect((await control(live, 'pause', {}, {}, stranger)).status).toBe(404);
      expect((await control(live, 'bogus')).status).toBe(404);
      expect((await control(live, 'pause', { drainPolicy: 'later' })).body.error).toBe('validation_error');
      expect((await control(live, 'pause', { extra: 1 })).body.error).toBe('validation_error');
      expect((await control(live, 'resume', { drainPolicy: 'immediate' })).body.error).toBe('validation_error');
      const reader = await t.key({ scopes: ['runs:read'] });
      expect((await control(live, 'pause', {}, {}, reader)).status).toBe(403);
      await t.http('POST', `/v1/runs/${live}/cancel`, { token: key, body: {} });
    });

    it('a paused run can be cancelled', async () => {
      const runId = await start('test-slow');
      await waitForStatus(t, key, runId, ['running']);
      expect((await control(runId, 'pause', { drainPolicy: 'immediate' })).status).toBe(202);
      await waitForStatus(t, key, runId, ['paused'], 5000);
      expect((await t.http('POST', `/v1/runs/${runId}/cancel`, { token: key, body: {} })).body.status).toBe('cancelled');
    });

    it('is advertised as runs.pauseResume with both drain policies', async () => {
      expect((await t.http('GET', '/.well-known/openwop')).body.runs).toEqual({ pauseResume: { supported: true, drainPolicies: ['immediate', 'drain-current-node'] } });
    });
  });
});
