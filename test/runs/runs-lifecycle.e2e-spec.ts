/** The run lifecycle through the generated OpenAPI client and raw HTTP: create, read, list, events, SSE, cancel. */
import { createTestApp, TestApp } from '../support/test-app';
import { expectNoDoubleCompletion, expectSchemaValid, installChains, noopChain, runEvents, waitForStatus } from './run-kit';

/** The event-log era every run is stamped with (the v2 digest: `3` on every new run, whichever major created it). */
const EVENT_LOG_ERA = 3;

describe('runs: lifecycle', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel', 'tools:read'] });
    await installChains(t, 'default', 'vendor.test.chains', {
      'vendor.test.chain': noopChain(3),
      'vendor.test.fanout': {
        nodes: [
          { id: 'src', typeId: 'core.noop', config: { greeting: 'hello {{inputs.who}}', n: '{{inputs.n}}' } },
          { id: 'left', typeId: 'core.noop', config: { from: '{{nodes.src.greeting}}' } },
          { id: 'right', typeId: 'core.delay', config: { ms: '{{inputs.n}}' } },
          { id: 'join', typeId: 'core.noop', config: { both: true } },
        ],
        edges: [{ from: 'src', to: 'left' }, { from: 'src', to: 'right' }, { from: 'left', to: 'join' }, { from: 'right.delayedMs', to: 'join.waited' }],
      },
      'vendor.test.slow': { nodes: [{ id: 'a', typeId: 'core.noop' }, { id: 'wait', typeId: 'core.delay', config: { ms: 20000 } }, { id: 'after', typeId: 'core.noop' }], edges: [{ from: 'a', to: 'wait' }, { from: 'wait', to: 'after' }] },
    });
  });

  afterAll(async () => {
    if (process.env.DEBUG_RUNS) console.log(t.logs.filter((l) => /runs|error/i.test(l)).slice(-20).join('\n'));
    await t?.close();
  });

  it('runs a chain to completion through the generated client, with schema-valid events in order', async () => {
    const api = t.api(key);
    const created = await api.POST('/v1/runs', { body: { workflowId: 'vendor.test.chain', inputs: { x: 1 } } });
    expect(created.response.status).toBe(201);
    const run = created.data!;
    expect(['pending', 'running']).toContain(run.status);
    expect(run.workflowId).toBe('vendor.test.chain');
    expect(run.owner).toEqual({ tenant: 'default', principal: 'tester' });
    // Every run carries its event-log era (a snapshot without it reads as a legacy run).
    expect(run.eventLogSchemaVersion).toBe(EVENT_LOG_ERA);
    const done = await waitForStatus(t, key, run.runId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.outputs).toEqual({ n3: { step: 3 } });
    const got = await api.GET('/v1/runs/{runId}', { params: { path: { runId: run.runId } } });
    expect(got.data!.status).toBe('completed');
    expect(got.data).toEqual(expect.objectContaining({ eventLogSchemaVersion: EVENT_LOG_ERA, owner: { tenant: 'default', principal: 'tester' } }));
    expect(t.app.get(SchemaRegistryRef).validate('run-snapshot', got.data)).toEqual([]);

    const events = await runEvents(t, key, run.runId);
    expectSchemaValid(events);
    expect(events.map((e) => e.type)).toEqual([
      'run.started',
      'node.started', 'node.completed',
      'node.started', 'node.completed',
      'node.started', 'node.completed',
      'run.completed',
    ]);
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
    expect(events[0].payload).toMatchObject({ workflowId: 'vendor.test.chain', inputs: { x: 1 }, owner: { tenant: 'default' } });
  });

  it('discovery advertises the event-log era runs are written with; the JSON string cap has no limits key to go under', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.status).toBe(200);
    expect(d.body.eventLogSchemaVersion).toBe(EVENT_LOG_ERA);
    expect(d.body.limits.maxRequestBodyBytes).toBe(t.config.maxRequestBodyBytes);
    // The v1 limits object is closed: the string cap is named by the 413 instead (docs/http-api.md).
    expect(Object.keys(d.body.limits)).not.toContain('maxStringLength');
    expect(t.app.get(SchemaRegistryRef).validate('capabilities', d.body)).toEqual([]);
  });

  it('runs independent branches, passes outputs along edges and templates config', async () => {
    const created = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'workflow:vendor.test.fanout', inputs: { who: 'ada', n: 30 } } });
    expect(created.status).toBe(201);
    const done = await waitForStatus(t, key, created.body.runId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.nodeStates.left.status).toBe('completed');
    const events = await runEvents(t, key, created.body.runId);
    expectSchemaValid(events);
    const completed = Object.fromEntries(events.filter((e) => e.type === 'node.completed').map((e) => [e.payload.nodeId, e.payload.outputs]));
    expect(completed.src).toEqual({ greeting: 'hello ada', n: 30 });
    expect(completed.left).toEqual({ from: 'hello ada' });
    expect(completed.right).toEqual({ delayedMs: 30 });
    expect(done.outputs).toEqual({ join: { both: true } });
    await expectNoDoubleCompletion(t);
  });

  it('streams events as SSE and resumes after Last-Event-ID', async () => {
    const created = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.chain' } });
    await waitForStatus(t, key, created.body.runId, ['completed']);
    const all = await t.http('GET', `/v1/runs/${created.body.runId}/events?streamMode=debug`, { token: key, headers: { accept: 'text/event-stream' } });
    expect(all.status).toBe(200);
    expect(String(all.headers['content-type'])).toMatch(/^text\/event-stream/);
    const ids = [...all.text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(all.text).toMatch(/event: run.completed\ndata: \{/);
    const resumed = await t.http('GET', `/v1/runs/${created.body.runId}/events?streamMode=debug`, { token: key, headers: { 'last-event-id': '5' } });
    expect([...resumed.text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))).toEqual([6, 7, 8]);
    const bad = await t.http('GET', `/v1/runs/${created.body.runId}/events`, { token: key, headers: { 'last-event-id': 'abc' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('validation_error');
  });

  it('cancels a core.delay run: cancelling then cancelled, the delay aborted', async () => {
    const api = t.api(key);
    const created = await api.POST('/v1/runs', { body: { workflowId: 'vendor.test.slow' } });
    const runId = created.data!.runId;
    await waitForStatus(t, key, runId, ['running']);
    // Wait until the delay node is in flight.
    for (let i = 0; i < 100 && !(await runEvents(t, key, runId)).some((e) => e.type === 'node.started' && e.payload.nodeId === 'wait'); i++) await new Promise((r) => setTimeout(r, 20));
    // The run shows the node in flight as its events do (first attempt: attempt 0).
    const inFlight = (await api.GET('/v1/runs/{runId}', { params: { path: { runId } } })).data!;
    expect(inFlight.nodeStates).toMatchObject({ a: { status: 'completed', attempt: 0 }, wait: { status: 'running', attempt: 0 } });
    expect(inFlight.nodeStates).not.toHaveProperty('after');
    const started = Date.now();
    const cancelled = await api.POST('/v1/runs/{runId}/cancel', { params: { path: { runId } } });
    expect(cancelled.response.status).toBe(200);
    expect(['cancelling', 'cancelled']).toContain(cancelled.data!.status);
    const done = await waitForStatus(t, key, runId, ['cancelled', 'completed', 'failed']);
    expect(done.status).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(5000);
    const events = await runEvents(t, key, runId);
    expectSchemaValid(events);
    const types = events.map((e) => e.type);
    expect(types).toContain('node.cancelled');
    expect(types[types.length - 1]).toBe('run.cancelled');
    expect(types).not.toContain('run.completed');
    expect(done.nodeStates.after.status).toBe('skipped');
    // Cancel is idempotent: the ended run answers 200 as it is, and nothing more is written.
    const again = await t.http('POST', `/v1/runs/${runId}/cancel`, { token: key });
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('cancelled');
    expect((await runEvents(t, key, runId)).length).toBe(events.length);
  });

  it('lists runs newest first with an opaque cursor, filtered by status', async () => {
    const listKey = await t.key({ tenant: 'lister', scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'lister', 'vendor.test.list', { 'vendor.test.one': noopChain(1) });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await t.http('POST', '/v1/runs', { token: listKey, body: { workflowId: 'vendor.test.one' } })).body.runId);
    for (const id of ids) await waitForStatus(t, listKey, id, ['completed']);
    const api = t.api(listKey);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const r = await api.GET('/v1/runs', { params: { query: { limit: 2, ...(cursor ? { cursor } : {}) } } });
      expect(r.response.status).toBe(200);
      seen.push(...r.data!.runs.map((x) => x.runId));
      if (!r.data!.nextCursor) break;
      cursor = r.data!.nextCursor;
    }
    expect(seen).toEqual([...ids].reverse());
    const completed = await t.http('GET', '/v1/runs?status=completed', { token: listKey });
    expect(completed.body.runs).toHaveLength(5);
    // The items of the list are RunSnapshots too: the same era and owner as a single read.
    for (const item of completed.body.runs) {
      expect(item).toEqual(expect.objectContaining({ eventLogSchemaVersion: EVENT_LOG_ERA, owner: expect.objectContaining({ tenant: 'lister' }) }));
      expect(typeof item.owner.principal).toBe('string');
      expect(t.app.get(SchemaRegistryRef).validate('run-snapshot', item)).toEqual([]);
    }
    expect((await t.http('GET', '/v1/runs?status=failed', { token: listKey })).body.runs).toEqual([]);
    for (const bad of ['cursor=%%%', `cursor=${Buffer.from('["x","y"]').toString('base64url')}`, 'status=done', 'limit=0', 'limit=abc']) {
      const r = await t.http('GET', `/v1/runs?${bad}`, { token: listKey });
      expect([bad, r.status, r.body.error]).toEqual([bad, 400, 'validation_error']);
    }
  });
});

import { SchemaRegistry as SchemaRegistryRef } from '../../src/platform/schemas/schema-registry';
