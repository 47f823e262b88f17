/**
 * A run whose every node is `deterministic` starts before its insert, and the insert carries its
 * first write: a chain that completes at once is inserted completed (row, node rows and events in
 * one statement, one transaction), a chain that waits is inserted running with what it had after
 * one turn, the 201 is the accepted run as before, what a node stores or performs waits for the
 * insert, a refused insert leaves nothing, and other chains are inserted pending as before.
 */
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';
import { expectSchemaValid, installChains, noopChain, runEvents, waitForStatus } from './run-kit';

const plugin = path.join(__dirname, '../fixtures/plugins/run-plugin.ts');

describe('runs: a run of deterministic nodes starts before its insert', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_PLUGINS: plugin } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'artifacts:read'] });
    await installChains(t, 'default', 'vendor.test.eager', {
      'vendor.test.noop3': noopChain(3),
      'vendor.test.waits': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 1500 } }, { id: 'after', typeId: 'core.noop' }], edges: [{ from: 'wait', to: 'after' }] },
      'vendor.test.gated': { nodes: [{ id: 'first', typeId: 'core.noop' }, { id: 'ask', typeId: 'core.approval', config: { title: 'go?' } }], edges: [{ from: 'first', to: 'ask' }] },
      'vendor.test.fails': { nodes: [{ id: 'boom', typeId: 'core.fail', config: { code: 'planned_failure', message: 'as planned' } }, { id: 'never', typeId: 'core.noop' }], edges: [{ from: 'boom', to: 'never' }] },
      'vendor.test.records': { nodes: [{ id: 'rec', typeId: 'vendor.test.recorder' }] },
      'vendor.test.unstorable': { nodes: [{ id: 'rec', typeId: 'vendor.test.recorder', config: { nul: true } }] },
    });
  });

  afterAll(async () => {
    delete (globalThis as { __runProbe?: unknown }).__runProbe;
    await t?.close();
  });

  async function row(runId: string): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any
    const [r] = await t.ds.query(
      `SELECT "status", "fence", "lease_owner", "node_executions", "current_node_id", "outputs", "error",
         "created_at" = "started_at" AS "started_by_insert", "completed_at" = "created_at" AS "completed_by_insert", "completed_at" IS NULL AS "open"
       FROM "run" WHERE "id" = $1`,
      [runId],
    );
    return r;
  }

  async function nodes(runId: string): Promise<Record<string, string>> {
    const rows = (await t.ds.query(`SELECT "node_id", "status" FROM "run_node" WHERE "run_id" = $1`, [runId])) as Array<{ node_id: string; status: string }>;
    return Object.fromEntries(rows.map((r) => [r.node_id, r.status]));
  }

  it('inserts a chain that completes at once completed: the row, its node rows and its events in one transaction; the 201 is the accepted run', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.noop3', inputs: { x: 1 } } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ status: 'pending', workflowId: 'vendor.test.noop3', nodeStates: {} });
    // Written by the insert's own transaction (now() is the transaction's time): started and completed as it was created.
    expect(await row(r.body.runId)).toEqual({
      status: 'completed',
      fence: 1,
      lease_owner: null,
      node_executions: 3,
      current_node_id: null,
      outputs: { n3: { step: 3 } },
      error: null,
      started_by_insert: true,
      completed_by_insert: true,
      open: false,
    });
    expect(await nodes(r.body.runId)).toEqual({ n1: 'completed', n2: 'completed', n3: 'completed' });
    const events = await runEvents(t, key, r.body.runId);
    expect(events.map((e) => [e.sequence, e.type, e.nodeId ?? null])).toEqual([
      [1, 'run.started', null],
      [2, 'node.started', 'n1'],
      [3, 'node.completed', 'n1'],
      [4, 'node.started', 'n2'],
      [5, 'node.completed', 'n2'],
      [6, 'node.started', 'n3'],
      [7, 'node.completed', 'n3'],
      [8, 'run.completed', null],
    ]);
    expectSchemaValid(events);
    const snapshot = await waitForStatus(t, key, r.body.runId, ['completed']);
    expect(snapshot.metrics).toEqual({ nodeExecutions: 3, openwopCost: { usd: 0 } });
    // The SSE stream answers the same run to its end.
    const sse = await t.http('GET', `/v1/runs/${r.body.runId}/events`, { token: key, headers: { accept: 'text/event-stream' } });
    expect(sse.status).toBe(200);
    // (Its default stream mode leaves node.started out.)
    expect(sse.text.match(/^event: (.+)$/gm)).toEqual(['run.started', 'node.completed', 'node.completed', 'node.completed', 'run.completed'].map((e) => `event: ${e}`));
  });

  it('inserts a chain whose node waits running, without waiting for the node, and completes it later', async () => {
    const sent = Date.now();
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.waits' } });
    expect(r.status).toBe(201);
    expect(Date.now() - sent).toBeLessThan(1000);
    expect(await row(r.body.runId)).toMatchObject({ status: 'running', fence: 1, lease_owner: expect.any(String), node_executions: 1, started_by_insert: true, open: true });
    expect(await nodes(r.body.runId)).toEqual({ wait: 'running' });
    expect((await runEvents(t, key, r.body.runId)).map((e) => e.type)).toEqual(['run.started', 'node.started']);
    expect((await waitForStatus(t, key, r.body.runId, ['completed'])).status).toBe('completed');
    expect(await nodes(r.body.runId)).toEqual({ wait: 'completed', after: 'completed' });
  });

  it('inserts a chain that fails at once failed, its later nodes skipped', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.fails' } });
    expect(r.status).toBe(201);
    expect(await row(r.body.runId)).toMatchObject({ status: 'failed', error: { code: 'planned_failure', message: 'as planned' }, started_by_insert: true, completed_by_insert: true });
    expect(await nodes(r.body.runId)).toEqual({ boom: 'failed', never: 'skipped' });
  });

  it('inserts a chain with a node that is not deterministic pending, as before, and starts it after', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.gated' } });
    expect(r.status).toBe(201);
    const parked = await waitForStatus(t, key, r.body.runId, ['waiting-approval']);
    expect(parked.nodeStates).toMatchObject({ first: { status: 'completed' }, ask: { status: 'waiting' } });
    // Started by a later transaction than its insert.
    expect(await row(r.body.runId)).toMatchObject({ status: 'waiting-approval', started_by_insert: false });
  });

  it('lets what a node stores or performs wait for its run to be inserted', async () => {
    const seen: Array<string | null> = [];
    (globalThis as { __runProbe?: (runId: string) => Promise<unknown> }).__runProbe = async (runId) => {
      const [r] = (await t.ds.query(`SELECT "status" FROM "run" WHERE "id" = $1`, [runId])) as Array<{ status: string }>;
      seen.push(r?.status ?? null);
      return r?.status ?? null;
    };
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.records' } });
    expect(r.status).toBe(201);
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    // The effect ran once, with the run already written; the artifact is the run's.
    expect(seen).toEqual(['running']);
    expect(done.outputs.rec).toEqual({ artifactId: expect.any(String), seen: 'running' });
    expect(done.artifacts).toEqual([expect.objectContaining({ name: 'note.txt', nodeId: 'rec', artifactId: done.outputs.rec.artifactId })]);
    const types = (await runEvents(t, key, r.body.runId)).map((e) => e.type);
    expect(types).toEqual(['run.started', 'node.started', 'artifact.created', 'node.completed', 'run.completed']);
  });

  it('inserts a run whose first write the database refuses the usual way: 201, and the run fails with engine_error', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.unstorable' } });
    expect(r.status).toBe(201);
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
    expect([done.status, done.error?.code]).toEqual(['failed', 'engine_error']);
    expect(await row(r.body.runId)).toMatchObject({ status: 'failed', started_by_insert: false });
    // As the engine records a fault: what was not written of the node is skipped, nothing of the refused write is kept.
    expect((await runEvents(t, key, r.body.runId)).map((e) => e.type)).toEqual(['run.started', 'node.skipped', 'run.failed']);
  });

  it('writes nothing for a run whose insert is refused: one run per Idempotency-Key, no stray events or node rows', async () => {
    const body = { workflowId: 'vendor.test.noop3', inputs: { k: 'eager' } };
    const results = await Promise.all([1, 2, 3, 4, 5, 6].map(() => t.http('POST', '/v1/runs', { token: key, body, headers: { 'idempotency-key': 'eager-key-1' } })));
    expect(results.map((x) => x.status)).toEqual([201, 201, 201, 201, 201, 201]);
    expect(new Set(results.map((x) => x.body.runId)).size).toBe(1);
    expect(results.filter((x) => x.headers['openwop-idempotent-replay'] === 'false')).toHaveLength(1);
    const other = await t.http('POST', '/v1/runs', { token: key, body: { ...body, inputs: { k: 'other' } }, headers: { 'idempotency-key': 'eager-key-1' } });
    expect([other.status, other.body.error]).toEqual([409, 'idempotency_key_mismatch']);
    // Every event stream and node row belongs to a run that exists.
    const [{ n: strayEvents }] = await t.ds.query(`SELECT count(*)::int AS "n" FROM "event" e LEFT JOIN "event_stream" s ON s."key" = e."stream_key" WHERE s."key" IS NULL OR (s."stream_id" ~ '^[0-9a-f-]{36}$' AND NOT EXISTS (SELECT 1 FROM "run" r WHERE r."id"::text = s."stream_id"))`);
    const [{ n: strayStreams }] = await t.ds.query(`SELECT count(*)::int AS "n" FROM "event_stream" s WHERE s."stream_id" ~ '^[0-9a-f-]{36}$' AND NOT EXISTS (SELECT 1 FROM "run" r WHERE r."id"::text = s."stream_id")`);
    const [{ n: strayNodes }] = await t.ds.query(`SELECT count(*)::int AS "n" FROM "run_node" n WHERE NOT EXISTS (SELECT 1 FROM "run" r WHERE r."id" = n."run_id")`);
    expect({ strayEvents, strayStreams, strayNodes }).toEqual({ strayEvents: 0, strayStreams: 0, strayNodes: 0 });
    expect((await waitForStatus(t, key, results[0].body.runId, ['completed'])).outputs).toEqual({ n3: { step: 3 } });
  });
});
