/**
 * Run fork (replay.md): POST /v1/runs/{runId}:fork in `replay` and `branch` mode, from the start
 * and from the middle of a run, its determinism, every refusal, tenant isolation, and
 * GET /v1/runs/{runId}:diff.
 */
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { createTestApp, TestApp } from '../support/test-app';
import { expectSchemaValid, installChains, runEvents, TestEvent, waitForStatus } from './run-kit';

const shape = (events: TestEvent[]) => events.map((e) => ({ type: e.type, nodeId: e.nodeId ?? null, payload: e.payload }));

describe('runs: fork and replay', () => {
  let t: TestApp;
  let key: string;
  let stranger: string;
  let readOnly: string;
  let createOnly: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel', 'approvals:respond'] });
    stranger = await t.key({ tenant: 'stranger', scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    readOnly = await t.key({ scopes: ['runs:read'] });
    createOnly = await t.key({ scopes: ['runs:create'] });
    await installChains(t, 'default', 'vendor.test.fork', {
      // Each node passes its upstream's value on: c's output shows which b output it was given.
      'test-relay': {
        nodes: [
          { id: 'a', typeId: 'core.noop', config: { v: '{{inputs.x}}' } },
          { id: 'b', typeId: 'core.noop', config: { v: '{{nodes.a.v}}' } },
          { id: 'c', typeId: 'core.noop', config: { v: '{{nodes.b.v}}' } },
        ],
        edges: [{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }],
      },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  const finished = async (workflowId: string, inputs: Record<string, unknown> = {}, token = key, status = 'completed') => {
    const r = await t.http('POST', '/v1/runs', { token, body: { workflowId, inputs } });
    expect(r.status).toBe(201);
    await waitForStatus(t, token, r.body.runId, [status]);
    return r.body.runId as string;
  };
  const fork = (runId: string, body: unknown, token = key, headers: Record<string, string> = {}) => t.http('POST', `/v1/runs/${runId}:fork`, { token, body, headers });
  const forked = async (runId: string, body: Record<string, unknown>, status = 'completed') => {
    const r = await fork(runId, body);
    expect(r.status).toBe(201);
    await waitForStatus(t, key, r.body.runId, [status]);
    return r.body.runId as string;
  };
  const completedSeq = (events: TestEvent[], nodeId: string) => events.find((e) => e.type === 'node.completed' && e.nodeId === nodeId)!.sequence;

  it('discovery advertises replay with both modes (capabilities.schema.json `replay`)', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.replay).toEqual({ supported: true, modes: ['replay', 'branch'] });
  });

  describe('replay', () => {
    it('a full replay (fromSeq 0) is a new, completed run of the same chain; its answer and events follow the protocol', async () => {
      const source = await finished('conformance-noop');
      const r = await fork(source, { fromSeq: 0, mode: 'replay' });
      expect(r.status).toBe(201);
      expect(r.body).toEqual({
        runId: expect.any(String),
        sourceRunId: source,
        fromSeq: 0,
        mode: 'replay',
        status: 'pending',
        eventsUrl: expect.stringMatching(new RegExp(`^http://[^/]+/v1/runs/${r.body.runId}/events$`)),
        statusUrl: expect.stringMatching(new RegExp(`^http://[^/]+/v1/runs/${r.body.runId}$`)),
      });
      expect(r.body.runId).not.toBe(source);
      const snap = await waitForStatus(t, key, r.body.runId, ['completed']);
      expect(snap.workflowId).toBe('conformance-noop');
      expect(snap.owner).toEqual((await t.http('GET', `/v1/runs/${source}`, { token: key })).body.owner);
      const events = await runEvents(t, key, r.body.runId);
      expectSchemaValid(events);
      expect(events.map((e) => e.type)).toEqual(['run.started', 'node.started', 'node.completed', 'run.completed']);
      // A replay does not observe the wall clock.
      expect(events.some((e) => 'durationMs' in e.payload)).toBe(false);
      // Lineage on the new run; claimed like any run (its fence was taken by a claim).
      const [row] = (await t.ds.query(`SELECT "metadata"->'fork' AS "fork", "fence" FROM "run" WHERE "id" = $1`, [r.body.runId])) as Array<{ fork: unknown; fence: number }>;
      expect(row.fork).toEqual({ sourceRunId: source, mode: 'replay', fromSeq: 0 });
      expect(row.fence).toBeGreaterThanOrEqual(1);
    });

    it('`{mode: "replay"}` alone defaults fromSeq to 0; an empty overlay is accepted', async () => {
      const source = await finished('conformance-noop');
      const r = await fork(source, { mode: 'replay', runOptionsOverlay: {} });
      expect(r.status).toBe(201);
      expect(r.body.fromSeq).toBe(0);
      await waitForStatus(t, key, r.body.runId, ['completed']);
    });

    it('two replays of the same point log identical events (type, node, payload)', async () => {
      const source = await finished('conformance-multi-node');
      const one = await forked(source, { fromSeq: 0, mode: 'replay' });
      const two = await forked(source, { fromSeq: 0, mode: 'replay' });
      const [e1, e2] = [await runEvents(t, key, one), await runEvents(t, key, two)];
      expect(e1.length).toBe(8); // run.started, 3 x (node.started, node.completed), run.completed
      expect(shape(e1)).toEqual(shape(e2));
      expect(e1.map((e) => e.sequence)).toEqual(e2.map((e) => e.sequence));
    });

    it('from the middle (after node b completed): a and b keep their recorded outputs, only c runs again', async () => {
      const source = await finished('conformance-multi-node');
      const src = await runEvents(t, key, source);
      const fromSeq = completedSeq(src, 'b') + 1;
      const r = await fork(source, { fromSeq, mode: 'replay' });
      expect(r.status).toBe(201);
      // The inherited history holds run.started: the fork continues it.
      expect(r.body.status).toBe('running');
      const snap = await waitForStatus(t, key, r.body.runId, ['completed']);
      expect(snap.nodeStates).toEqual({ a: expect.objectContaining({ status: 'completed' }), b: expect.objectContaining({ status: 'completed' }), c: expect.objectContaining({ status: 'completed' }) });
      expect(snap.outputs).toEqual({ c: { step: 'c' } });
      const events = await runEvents(t, key, r.body.runId);
      expectSchemaValid(events);
      // Fixed history: the source's events before fromSeq, at the same sequences.
      const prefix = events.filter((e) => e.sequence < fromSeq);
      expect(shape(prefix)).toEqual(shape(src.filter((e) => e.sequence < fromSeq)));
      expect(prefix.map((e) => e.sequence)).toEqual(src.filter((e) => e.sequence < fromSeq).map((e) => e.sequence));
      expect(prefix.map((e) => e.eventId)).not.toEqual(src.filter((e) => e.sequence < fromSeq).map((e) => e.eventId));
      const tail = events.filter((e) => e.sequence >= fromSeq);
      expect(tail.map((e) => [e.type, e.nodeId ?? null])).toEqual([['node.started', 'c'], ['node.completed', 'c'], ['run.completed', null]]);
      expect(tail[0].sequence).toBe(fromSeq);
      // A second replay of the same point has the same tail.
      const again = await forked(source, { fromSeq, mode: 'replay' });
      expect(shape((await runEvents(t, key, again)).filter((e) => e.sequence >= fromSeq))).toEqual(shape(tail));
      // The source is untouched.
      expect(shape(await runEvents(t, key, source))).toEqual(shape(src));
    });

    it('the inherited outputs are the recorded ones, not recomputed: c is given what the log says b produced', async () => {
      const source = await finished('test-relay', { x: 'live' });
      const src = await runEvents(t, key, source);
      expect((await t.http('GET', `/v1/runs/${source}`, { token: key })).body.outputs).toEqual({ c: { v: 'live' } });
      // Rewrite history: the log now says b produced `recorded`.
      await t.ds.query(`UPDATE "event" SET "payload" = jsonb_set("payload"::jsonb, '{outputs}', '{"v": "recorded"}')::json WHERE "stream_key" = (SELECT "key" FROM "event_stream" WHERE "stream_id" = $1) AND "event_type_name"("code", "type") = 'node.completed' AND "node_id" = 'b'`, [source]);
      const after = await forked(source, { fromSeq: completedSeq(src, 'b') + 1, mode: 'replay' });
      expect((await t.http('GET', `/v1/runs/${after}`, { token: key })).body.outputs).toEqual({ c: { v: 'recorded' } });
      // From before b, b runs again from a's recorded output.
      const before = await forked(source, { fromSeq: completedSeq(src, 'b'), mode: 'replay' });
      expect((await t.http('GET', `/v1/runs/${before}`, { token: key })).body.outputs).toEqual({ c: { v: 'live' } });
    });

    it('fromSeq at the last event of the source is accepted; a failed node in the history fails the fork', async () => {
      const source = await finished('conformance-failure', {}, key, 'failed');
      const src = await runEvents(t, key, source);
      const last = src[src.length - 1].sequence;
      const r = await fork(source, { fromSeq: last, mode: 'replay' });
      expect(r.status).toBe(201);
      const snap = await waitForStatus(t, key, r.body.runId, ['failed']);
      expect(snap.error.code).toBe('conformance_failure');
      const events = await runEvents(t, key, r.body.runId);
      expectSchemaValid(events);
      expect(events.filter((e) => e.type === 'node.started')).toHaveLength(1); // the history's, not a new attempt
    });

    it('a human decision is not asked again: the approval the source recorded stands in; without one the node fails closed', async () => {
      const gated = await (async () => {
        const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance-approval' } });
        await waitForStatus(t, key, r.body.runId, ['waiting-approval']);
        return r.body.runId as string;
      })();
      // Still waiting: nothing recorded for the gate.
      const missing = await forked(gated, { mode: 'replay' }, 'failed');
      const m = await t.http('GET', `/v1/runs/${missing}`, { token: key });
      expect(m.body.nodeStates.gate.error.code).toBe('replay_source_missing');
      expectSchemaValid(await runEvents(t, key, missing));
      expect((await t.http('GET', '/v1/approvals', { token: key })).status).not.toBe(500);
      // Granted: a replay completes with the recorded outcome and opens no gate.
      expect((await t.http('POST', `/v1/runs/${gated}/interrupts/gate`, { token: key, body: { resumeValue: { action: 'accept' } } })).status).toBeLessThan(300);
      await waitForStatus(t, key, gated, ['completed']);
      const replayed = await forked(gated, { mode: 'replay' });
      const rs = await t.http('GET', `/v1/runs/${replayed}`, { token: key });
      expect(rs.body.outputs).toEqual((await t.http('GET', `/v1/runs/${gated}`, { token: key })).body.outputs);
      expect((await runEvents(t, key, replayed)).map((e) => e.type)).not.toContain('node.suspended');
      // A branch is a new execution: it asks again.
      const b = await fork(gated, { fromSeq: 0, mode: 'branch' });
      expect(b.status).toBe(201);
      await waitForStatus(t, key, b.body.runId, ['waiting-approval']);
      await t.http('POST', `/v1/runs/${b.body.runId}/cancel`, { token: key, body: {} });
    });
  });

  it('webhooks deliver nothing of a replay (its events re-state history); a branch is delivered like any run', async () => {
    await t.ds.query(
      `INSERT INTO "webhook_subscription" ("id", "tenant", "workspace", "principal", "url", "events", "tags", "secret_ref", "secret_fingerprint")
       VALUES ('wh_forktest', 'default', NULL, 'tester', 'https://hooks.example.test/x', ARRAY['run.started', 'node.completed', 'run.completed'], NULL, gen_random_uuid(), 'fp')`,
    );
    try {
      const source = await finished('conformance-multi-node');
      const fromSeq = completedSeq(await runEvents(t, key, source), 'a') + 1;
      const replay = await forked(source, { fromSeq, mode: 'replay' });
      const branch = await forked(source, { fromSeq, mode: 'branch' });
      const deliveries = async (runId: string) => Number((await t.ds.query(`SELECT count(*) AS n FROM "webhook_delivery" WHERE "webhook_id" = 'wh_forktest' AND "run_id" = $1`, [runId]))[0].n);
      expect(await deliveries(source)).toBe(5);
      expect(await deliveries(replay)).toBe(0);
      // The branch's inherited history (run.started, node.completed a) and its own events (b, c, run.completed).
      expect(await deliveries(branch)).toBe(5);
    } finally {
      await t.ds.query(`DELETE FROM "webhook_subscription" WHERE "id" = 'wh_forktest'`);
    }
  });

  describe('branch', () => {
    it('takes a RunOptions overlay: configurable (bounds checked), tags replaced, metadata merged', async () => {
      const source = await finished('conformance-multi-node');
      const r = await fork(source, { fromSeq: 0, mode: 'branch', runOptionsOverlay: { configurable: { maxLoopIterations: 2 }, tags: ['fork:debug'], metadata: { why: 'what-if' } } });
      expect(r.status).toBe(201);
      expect(r.body.mode).toBe('branch');
      const snap = await waitForStatus(t, key, r.body.runId, ['failed']);
      expect(snap.error.code).toBe('loop_limit');
      expect(snap.configurable.maxLoopIterations).toBe(2);
      expect(snap.tags).toEqual(['fork:debug']);
      expect(snap.metadata).toEqual({ why: 'what-if' });
      const events = await runEvents(t, key, r.body.runId);
      expectSchemaValid(events);
      // A branch is a new execution and reports durations.
      expect(events.find((e) => e.type === 'node.completed')!.payload.durationMs).toEqual(expect.any(Number));
      const bad = await fork(source, { fromSeq: 0, mode: 'branch', runOptionsOverlay: { configurable: { maxLoopIterations: 1e9 } } });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('validation_error');
    });

    it('from the middle with an empty overlay completes, executing only what follows fromSeq', async () => {
      const source = await finished('conformance-multi-node');
      const fromSeq = completedSeq(await runEvents(t, key, source), 'b') + 1;
      const r = await forked(source, { fromSeq, mode: 'branch', runOptionsOverlay: {} });
      const started = (await runEvents(t, key, r)).filter((e) => e.type === 'node.started' && e.sequence >= fromSeq);
      expect(started.map((e) => e.nodeId)).toEqual(['c']);
    });
  });

  describe('refusals', () => {
    let source: string;
    let last: number;
    beforeAll(async () => {
      source = await finished('conformance-noop');
      const events = await runEvents(t, key, source);
      last = events[events.length - 1].sequence;
    });
    const runs = async () => Number((await t.ds.query(`SELECT count(*) AS n FROM "run"`))[0].n);

    it.each([
      ['a negative fromSeq', { fromSeq: -1, mode: 'replay' }],
      ['a fractional fromSeq', { fromSeq: 1.5, mode: 'branch' }],
      ['a string fromSeq', { fromSeq: '1', mode: 'branch' }],
      ['no mode', { fromSeq: 0 }],
      ['an unknown mode', { fromSeq: 0, mode: 'rewind' }],
      ['a branch without fromSeq', { mode: 'branch' }],
      ['a replay with a non-empty overlay', { fromSeq: 0, mode: 'replay', runOptionsOverlay: { configurable: { recursionLimit: 50 } } }],
      ['an overlay that is not an object', { fromSeq: 0, mode: 'branch', runOptionsOverlay: [] }],
      ['an overlay key outside RunOptions', { fromSeq: 0, mode: 'branch', runOptionsOverlay: { inputs: { x: 1 } } }],
      ['overlay tags that are not strings', { fromSeq: 0, mode: 'branch', runOptionsOverlay: { tags: [1] } }],
      ['an unknown body field', { fromSeq: 0, mode: 'replay', extra: true }],
    ])('%s is 400 validation_error and starts nothing', async (_, body) => {
      const before = await runs();
      const r = await fork(source, body);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('validation_error');
      expect(await runs()).toBe(before);
    });

    it('fromSeq beyond the source\'s last sequence is 422 fork_sequence_not_found', async () => {
      const r = await fork(source, { fromSeq: last + 1, mode: 'branch' });
      expect(r.status).toBe(422);
      expect(r.body).toEqual({ error: 'fork_sequence_not_found', message: expect.any(String), details: { sourceRunId: source, fromSeq: last + 1, lastSequence: last } });
      expect((await fork(source, { fromSeq: 99999, mode: 'replay' })).status).toBe(422);
    });

    it('unknown and foreign runs are 404; the fork needs runs:create and runs:read', async () => {
      expect((await fork('00000000-0000-4000-8000-000000000000', { fromSeq: 0, mode: 'replay' })).status).toBe(404);
      expect((await fork('openwop-conformance-no-such-run-id', { fromSeq: 0, mode: 'replay' })).status).toBe(404);
      const foreign = await fork(source, { fromSeq: 0, mode: 'replay' }, stranger);
      expect(foreign.status).toBe(404);
      expect(foreign.body.error).toBe('not_found');
      expect((await fork(source, { fromSeq: 0, mode: 'replay' }, readOnly)).status).toBe(403);
      expect((await fork(source, { fromSeq: 0, mode: 'replay' }, createOnly)).status).toBe(403);
      expect((await t.http('POST', `/v1/runs/${source}:fork`, { body: { fromSeq: 0, mode: 'replay' } })).status).toBe(401);
      // A stranger's own fork is its own run, invisible to us.
      const theirs = await finished('conformance-noop', {}, stranger);
      const tf = await fork(theirs, { mode: 'replay' }, stranger);
      expect(tf.status).toBe(201);
      expect((await t.http('GET', `/v1/runs/${tf.body.runId}`, { token: key })).status).toBe(404);
      expect((await fork(tf.body.runId, { mode: 'replay' })).status).toBe(404);
    });

    it('Idempotency-Key: the same fork again answers the first 201; another body under the key is 409', async () => {
      const headers = { 'idempotency-key': `fork-${source}` };
      const one = await fork(source, { mode: 'replay' }, key, headers);
      const two = await fork(source, { mode: 'replay' }, key, headers);
      expect(one.status).toBe(201);
      expect(two.status).toBe(201);
      expect(two.body.runId).toBe(one.body.runId);
      expect(two.headers['openwop-idempotent-replay']).toBe('true');
      expect((await fork(source, { mode: 'branch', fromSeq: 0 }, key, headers)).status).toBe(409);
    });
  });

  describe('GET /v1/runs/{runId}:diff', () => {
    it('two replays of one point do not differ; a replay differs from its source where the source observed the clock', async () => {
      const source = await finished('conformance-noop');
      const one = await forked(source, { mode: 'replay' });
      const two = await forked(source, { mode: 'replay' });
      const same = await t.http('GET', `/v1/runs/${one}:diff?against=${two}`, { token: key });
      expect(same.status).toBe(200);
      expect(same.body).toEqual({ a: one, b: two, divergedAtSeq: null, eventDiffs: [], stateDiff: {} });
      const d = await t.http('GET', `/v1/runs/${source}:diff?against=${one}`, { token: key });
      expect(d.status).toBe(200);
      expect(d.body.divergedAtSeq).toBe(3);
      expect(d.body.eventDiffs.map((x: { seq: number; op: string }) => [x.seq, x.op])).toEqual([[3, 'changed'], [4, 'changed']]);
      expect(d.body.eventDiffs[0].aEvent.payload.durationMs).toEqual(expect.any(Number));
      expect(d.body.eventDiffs[0].bEvent.payload.durationMs).toBeUndefined();
      expect(SchemaRegistryValid(d.body)).toEqual([]);
    });

    it('shorter and longer logs are removed / added; states compared', async () => {
      const a = await finished('conformance-noop');
      const b = await finished('conformance-multi-node');
      const d = await t.http('GET', `/v1/runs/${a}:diff?against=${b}`, { token: key });
      expect(d.body.eventDiffs.filter((x: { op: string }) => x.op === 'added').map((x: { seq: number }) => x.seq)).toEqual([5, 6, 7, 8]);
      expect(d.body.stateDiff.outputs).toEqual({ a: { noop: {} }, b: { c: { step: 'c' } } });
      expect(d.body.stateDiff.status).toBeUndefined();
      expect(SchemaRegistryValid(d.body)).toEqual([]);
    });

    it('needs `against`; unknown and foreign runs are 404', async () => {
      const a = await finished('conformance-noop');
      const theirs = await finished('conformance-noop', {}, stranger);
      expect((await t.http('GET', `/v1/runs/${a}:diff`, { token: key })).status).toBe(400);
      expect((await t.http('GET', `/v1/runs/${a}:diff?against=${theirs}`, { token: key })).status).toBe(404);
      expect((await t.http('GET', `/v1/runs/${theirs}:diff?against=${a}`, { token: key })).status).toBe(404);
      expect((await t.http('GET', `/v1/runs/${a}:diff?against=${a}`, { token: stranger })).status).toBe(404);
      expect((await t.http('GET', `/v1/runs/${a}:diff?against=${a}`, { token: createOnly })).status).toBe(403);
      // The plain run read is still the run read.
      expect((await t.http('GET', `/v1/runs/${a}`, { token: key })).body.runId).toBe(a);
    });
  });
});

/** The problems of a diff answer against the protocol's run-diff-response.schema.json. */
function SchemaRegistryValid(body: unknown): unknown[] {
  return SchemaRegistry.shared().validate('run-diff-response', body);
}
