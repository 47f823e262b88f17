/**
 * Concurrent `POST /v1/runs` are inserted together: the inserts that wait while others are in
 * flight leave as one statement (RunInsertBatches), both for runs inserted with their first write
 * and for runs inserted pending. Each request still gets its own answer: one run each, one run per
 * Idempotency-Key even when two requests with the key share a statement, and a row the database
 * refuses fails alone (the batch is sent again run by run) while its neighbours are created. Runs
 * written by one statement share its transaction's time (`created_at`), which is how a batch shows.
 */
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain, waitForStatus } from './run-kit';

const plugin = path.join(__dirname, '../fixtures/plugins/run-plugin.ts');

describe('runs: concurrent creates share one insert statement', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_PLUGINS: plugin } });
    key = await t.key({ scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'default', 'vendor.test.batch', {
      'vendor.test.batch.noop': noopChain(2),
      'vendor.test.batch.gated': { nodes: [{ id: 'first', typeId: 'core.noop' }, { id: 'ask', typeId: 'core.approval', config: { title: 'go?' } }], edges: [{ from: 'first', to: 'ask' }] },
      'vendor.test.batch.unstorable': { nodes: [{ id: 'rec', typeId: 'vendor.test.recorder', config: { nul: true } }] },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  const post = (workflowId: string, inputs: Record<string, unknown>, idempotencyKey?: string) =>
    t.http('POST', '/v1/runs', { token: key, body: { workflowId, inputs }, headers: idempotencyKey ? { 'idempotency-key': idempotencyKey } : {} });

  async function rows(ids: string[]): Promise<Array<{ id: string; status: string; created: string; by_insert: boolean }>> {
    return (await t.ds.query(`SELECT "id", "status", "created_at"::text AS "created", "started_at" = "created_at" AS "by_insert" FROM "run" WHERE "id" = ANY($1::uuid[])`, [ids])) as Array<{ id: string; status: string; created: string; by_insert: boolean }>;
  }

  it('creates N runs for N concurrent requests, each answered with its own run, several in one statement', async () => {
    const n = 16;
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => post('vendor.test.batch.noop', { i })));
    expect(answers.map((a) => a.status)).toEqual(Array(n).fill(201));
    const ids = answers.map((a) => a.body.runId as string);
    expect(new Set(ids).size).toBe(n);
    const written = await rows(ids);
    expect(written).toHaveLength(n);
    // Inserted with their first write (completed by the insert), as a lone request's run is.
    expect(written.every((r) => r.status === 'completed' && r.by_insert)).toBe(true);
    // Fewer transactions than runs: some were written by one statement.
    expect(new Set(written.map((r) => r.created)).size).toBeLessThan(n);
    const inputs = (await t.ds.query(`SELECT "id", "inputs" FROM "run" WHERE "id" = ANY($1::uuid[])`, [ids])) as Array<{ id: string; inputs: { i: number } }>;
    // Each answer is its own request's run.
    for (const r of inputs) expect(r.inputs).toEqual({ i: ids.indexOf(r.id) });
  });

  it('batches runs inserted pending (a node that is not deterministic) the same way', async () => {
    const n = 12;
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => post('vendor.test.batch.gated', { i })));
    expect(answers.map((a) => a.status)).toEqual(Array(n).fill(201));
    const ids = answers.map((a) => a.body.runId as string);
    expect(new Set(ids).size).toBe(n);
    const written = await rows(ids);
    expect(written).toHaveLength(n);
    expect(written.every((r) => !r.by_insert)).toBe(true);
    expect(new Set(written.map((r) => r.created)).size).toBeLessThan(n);
    // Every one is claimed and executed to its gate.
    for (const id of ids) expect((await waitForStatus(t, key, id, ['waiting-approval'])).status).toBe('waiting-approval');
  });

  it('keeps one run per Idempotency-Key when requests with the same key share a statement; another body with the key is refused alone', async () => {
    const answers = await Promise.all([
      post('vendor.test.batch.noop', { same: true }, 'batch-key-a'),
      post('vendor.test.batch.noop', { other: 1 }),
      post('vendor.test.batch.noop', { same: true }, 'batch-key-a'),
      post('vendor.test.batch.noop', { other: 2 }),
      post('vendor.test.batch.noop', { same: true }, 'batch-key-a'),
      post('vendor.test.batch.noop', { b: 1 }, 'batch-key-b'),
      post('vendor.test.batch.noop', { b: 2 }, 'batch-key-b'),
      post('vendor.test.batch.gated', { same: true }, 'batch-key-c'),
      post('vendor.test.batch.gated', { same: true }, 'batch-key-c'),
      post('vendor.test.batch.noop', { other: 3 }),
    ]);
    const [a1, o1, a2, o2, a3, b1, b2, c1, c2, o3] = answers;
    expect([a1, a2, a3, o1, o2, o3, c1, c2].map((a) => a.status)).toEqual(Array(8).fill(201));
    expect(new Set([a1, a2, a3].map((a) => a.body.runId)).size).toBe(1);
    expect(c1.body.runId).toBe(c2.body.runId);
    expect(new Set([a1, o1, o2, o3, c1].map((a) => a.body.runId)).size).toBe(5);
    // The same key with another body: one is the key's run, the other 409.
    expect([b1.status, b2.status].sort()).toEqual([201, 409]);
    expect([b1, b2].find((b) => b.status === 409)!.body.error).toBe('idempotency_key_mismatch');
    const perKey = (await t.ds.query(`SELECT "idempotency_key" AS "key", count(*)::int AS "n" FROM "run" WHERE "idempotency_key" = ANY($1::text[]) GROUP BY 1 ORDER BY 1`, [['batch-key-a', 'batch-key-b', 'batch-key-c']])) as Array<{ key: string; n: number }>;
    expect(perKey).toEqual([{ key: 'batch-key-a', n: 1 }, { key: 'batch-key-b', n: 1 }, { key: 'batch-key-c', n: 1 }]);
  });

  it('keeps tenants apart when their creates are batched: one Idempotency-Key from two tenants makes a run for each, each read by its own tenant only', async () => {
    await installChains(t, 'globex', 'vendor.test.batch', { 'vendor.test.batch.noop': noopChain(2) });
    const other = await t.key({ tenant: 'globex', scopes: ['runs:create', 'runs:read'] });
    const postAs = (token: string, i: number) =>
      t.http('POST', '/v1/runs', { token, body: { workflowId: 'vendor.test.batch.noop', inputs: { i } }, headers: { 'idempotency-key': 'batch-two-tenants' } });
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => postAs(i % 2 ? other : key, i % 2)));
    // A replay answers with the creation's own answer (201).
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(201));
    const byTenant = (await t.ds.query(`SELECT "tenant", "id" FROM "run" WHERE "idempotency_key" = 'batch-two-tenants' ORDER BY 1`)) as Array<{ tenant: string; id: string }>;
    expect(byTenant.map((r) => r.tenant)).toEqual(['default', 'globex']);
    const mine = byTenant.find((r) => r.tenant === 'default')!.id;
    const theirs = byTenant.find((r) => r.tenant === 'globex')!.id;
    for (const [i, a] of answers.entries()) expect(a.body.runId).toBe(i % 2 ? theirs : mine);
    expect((await t.http('GET', `/v1/runs/${theirs}`, { token: key })).status).toBe(404);
    expect((await t.http('GET', `/v1/runs/${mine}`, { token: other })).status).toBe(404);
  });

  it('lets a row the database refuses fail alone: its neighbours are created as if it were not there', async () => {
    const answers = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => post('vendor.test.batch.noop', { i })),
      // Its first write holds a NUL the database cannot store: the run is inserted the usual way and fails.
      post('vendor.test.batch.unstorable', {}),
      // Its inputs hold one: no row of it can be stored at all.
      post('vendor.test.batch.noop', { bad: 'nul \u0000 here' }),
      ...Array.from({ length: 6 }, (_, i) => post('vendor.test.batch.gated', { i })),
    ]);
    const bad = answers[7];
    expect(bad.status).toBeGreaterThanOrEqual(400);
    const good = answers.filter((a) => a !== bad);
    expect(good.map((a) => a.status)).toEqual(Array(13).fill(201));
    const noops = await rows(good.slice(0, 6).map((a) => a.body.runId));
    expect(noops.every((r) => r.status === 'completed' && r.by_insert)).toBe(true);
    const failed = await waitForStatus(t, key, answers[6].body.runId, ['completed', 'failed']);
    expect([failed.status, failed.error?.code]).toEqual(['failed', 'engine_error']);
    for (const a of good.slice(7)) expect((await waitForStatus(t, key, a.body.runId, ['waiting-approval'])).status).toBe('waiting-approval');
    const [{ n }] = (await t.ds.query(`SELECT count(*)::int AS "n" FROM "run" WHERE "inputs" ? 'bad'`)) as Array<{ n: number }>;
    expect(n).toBe(0);
  });
});
