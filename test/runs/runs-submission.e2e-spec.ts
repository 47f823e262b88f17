/**
 * The submission path of POST /v1/runs: its round trips (counted in the pg driver, so the bound is
 * enforced, not described), the cache of installed chains across replicas (an uninstall on one
 * replica is never run on another, an install there is found at once), the run claimed by its own
 * insert, and an unclaimed run waking another replica through a notification instead of its poll.
 */
import { RunEngineService } from '../../src/capabilities/runs/engine/run-engine.service';
import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';
import { DatabaseNotifications } from '../../src/platform/database/database-notifications';
import { oneLine, StatementCapture } from '../support/statement-capture';
import { createTestApp, TestApp } from '../support/test-app';
import { chainPack, installChains, noopChain, waitForStatus } from './run-kit';

/** Statements sent by the work of a request (not by the run executions it starts). */
const capture = new StatementCapture();
const engineProto = RunEngineService.prototype as unknown as { start: (...args: unknown[]) => void };
const originalStart = engineProto.start;

async function counted<T>(fn: () => Promise<T>): Promise<{ result: T; statements: number; texts: string[] }> {
  const { result, statements } = await capture.during(fn);
  return { result, statements: statements.length, texts: statements.map((s) => oneLine(s.text, 120)) };
}

describe('runs: the submission path', () => {
  let a: TestApp;
  let b: TestApp;
  let keyA: string;
  let keyB: string;

  beforeAll(async () => {
    capture.install();
    // A run's execution is not the submission: its statements are not counted. Except for a run
    // started before its insert (the third argument): its first write is the submission's insert.
    engineProto.start = function (this: unknown, ...args: unknown[]) {
      return args[2] ? originalStart.apply(this, args) : capture.exit(() => originalStart.apply(this, args));
    };
    a = await createTestApp({ env: { OPENWOP_SCHEDULER_ENABLED: 'true' }, configFile: { runs: { claimIntervalMs: 60_000 } } });
    // A second replica on the same database; it executes only what it creates (no claim passes).
    b = await createTestApp({ database: a.databaseName, configFile: { runs: { maxActiveRuns: 1 } } });
    keyA = await a.key({ scopes: ['runs:create', 'runs:read'] });
    keyB = await b.key({ scopes: ['runs:create', 'runs:read'] });
    await installChains(a, 'default', 'vendor.test.submit', { 'vendor.test.one': noopChain(1), 'vendor.test.slow': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 3000 } }] } });
  });

  afterAll(async () => {
    capture.restore();
    engineProto.start = originalStart;
    await b?.close();
    await a?.close();
  });

  it('creates a run in at most 2 round trips, claimed by its own insert, and answers what it inserted', async () => {
    // The first submission reads the tenant's chains; every later one answers from memory.
    expect((await a.http('POST', '/v1/runs', { token: keyA, body: { workflowId: 'vendor.test.one' } })).status).toBe(201);
    const { result: r, statements, texts } = await counted(() => a.http('POST', '/v1/runs', { token: keyA, body: { workflowId: 'vendor.test.one', inputs: { x: 1 }, tags: ['t'] } }));
    expect(r.status).toBe(201);
    // The counter sees the driver's statements (the insert at least).
    expect(statements).toBeGreaterThanOrEqual(1);
    expect({ statements, texts: statements > 2 ? texts : [] }).toEqual({ statements: Math.min(statements, 2), texts: [] });
    expect(r.body).toMatchObject({ status: 'pending', workflowId: 'vendor.test.one', variables: { inputs: { x: 1 } }, tags: ['t'], nodeStates: {}, metrics: { nodeExecutions: 0, openwopCost: { usd: 0 } } });
    // Claimed at insert by this replica (fence 1: no claim statement of its own followed).
    const done = await waitForStatus(a, keyA, r.body.runId, ['completed']);
    expect(done.outputs).toEqual({ n1: { step: 1 } });
    const [row] = (await a.ds.query(`SELECT "fence" FROM "run" WHERE "id" = $1`, [r.body.runId])) as Array<{ fence: number }>;
    expect(row.fence).toBe(1);
  });

  it('a keyed create and its replay stay within 2 round trips each, and the replay answers the first 201', async () => {
    const body = { workflowId: 'vendor.test.one', inputs: { k: 'v' } };
    const first = await counted(() => a.http('POST', '/v1/runs', { token: keyA, body, headers: { 'idempotency-key': 'submission-key-1' } }));
    expect(first.result.status).toBe(201);
    expect(first.statements).toBeLessThanOrEqual(2);
    // The first run's own execution (its writes after its insert) must not be counted as the replay's.
    await waitForStatus(a, keyA, first.result.body.runId, ['completed']);
    const again = await counted(() => a.http('POST', '/v1/runs', { token: keyA, body, headers: { 'idempotency-key': 'submission-key-1' } }));
    expect(again.result.status).toBe(201);
    expect(again.result.headers['openwop-idempotent-replay']).toBe('true');
    expect(again.result.body).toEqual(first.result.body);
    expect(again.statements).toBeLessThanOrEqual(2);
    const other = await a.http('POST', '/v1/runs', { token: keyA, body: { ...body, inputs: { k: 'w' } }, headers: { 'idempotency-key': 'submission-key-1' } });
    expect(other.status).toBe(409);
  });

  it('never runs a chain uninstalled on another replica, and finds one installed there at once', async () => {
    const registry = a.app.get(ArtifactRegistryService);
    // Replica b has the tenant's chains in memory.
    expect((await b.http('POST', '/v1/runs', { token: keyB, body: { workflowId: 'vendor.test.one' } })).status).toBe(201);
    expect((await b.http('POST', '/v1/runs', { token: keyB, body: { workflowId: 'vendor.test.later' } })).status).toBe(404);
    // Installed on a: b runs it on its very next submission (the insert checks the catalog version).
    await registry.install('workflow-chain-pack', chainPack('vendor.test.later-pack', { 'vendor.test.later': noopChain(2) }), { tenant: 'default', principal: 'tester' }, 'test');
    const created = await b.http('POST', '/v1/runs', { token: keyB, body: { workflowId: 'vendor.test.later' } });
    expect(created.status).toBe(201);
    expect((await waitForStatus(b, keyB, created.body.runId, ['completed'])).outputs).toEqual({ n2: { step: 2 } });
    // Uninstalled on a: b refuses it at once and has written no run for it.
    await registry.uninstall({ tenant: 'default', principal: 'tester' }, 'workflow-chain-pack', 'vendor.test.later-pack');
    const [{ n: before }] = (await a.ds.query(`SELECT count(*)::int AS "n" FROM "run" WHERE "workflow_id" = 'vendor.test.later'`)) as Array<{ n: number }>;
    const refused = await b.http('POST', '/v1/runs', { token: keyB, body: { workflowId: 'vendor.test.later' } });
    expect(refused.status).toBe(404);
    const [{ n: after }] = (await a.ds.query(`SELECT count(*)::int AS "n" FROM "run" WHERE "workflow_id" = 'vendor.test.later'`)) as Array<{ n: number }>;
    expect(after).toBe(before);
    // Changed on a (same pack, another DAG): b runs the new one.
    await registry.install('workflow-chain-pack', chainPack('vendor.test.submit', { 'vendor.test.one': noopChain(3), 'vendor.test.slow': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 3000 } }] } }), { tenant: 'default', principal: 'tester' }, 'test');
    const changed = await b.http('POST', '/v1/runs', { token: keyB, body: { workflowId: 'vendor.test.one' } });
    expect(changed.status).toBe(201);
    expect((await waitForStatus(b, keyB, changed.body.runId, ['completed'])).outputs).toEqual({ n3: { step: 3 } });
  });

  it('sees chains installed by a bulk import and removed by plain SQL: the version is bumped by the table, not by the callers', async () => {
    expect((await b.http('POST', '/v1/runs', { token: keyB, body: { workflowId: 'vendor.test.one' } })).status).toBe(201);
    // installMany is the bundle import's path.
    await a.app.get(ArtifactRegistryService).installMany('workflow-chain-pack', [{ content: chainPack('vendor.test.bulk', { 'vendor.test.bulk-one': noopChain(1) }) }], { tenant: 'default', principal: 'tester' }, 'import');
    const created = await b.http('POST', '/v1/runs', { token: keyB, body: { workflowId: 'vendor.test.bulk-one' } });
    expect(created.status).toBe(201);
    await waitForStatus(b, keyB, created.body.runId, ['completed']);
    await a.ds.query(`DELETE FROM "installed_artifact" WHERE "tenant" = 'default' AND "name" = 'vendor.test.bulk'`);
    expect((await b.http('POST', '/v1/runs', { token: keyB, body: { workflowId: 'vendor.test.bulk-one' } })).status).toBe(404);
    // Another tenant's install does not move this tenant's version (its cache stays warm).
    const [{ v: before }] = (await a.ds.query(`SELECT coalesce((SELECT "version" FROM "chain_catalog_version" WHERE "tenant" = 'default'), 0)::text AS "v"`)) as Array<{ v: string }>;
    await installChains(a, 'other-tenant', 'vendor.test.other', { 'vendor.test.other': noopChain(1) });
    const [{ v: after }] = (await a.ds.query(`SELECT coalesce((SELECT "version" FROM "chain_catalog_version" WHERE "tenant" = 'default'), 0)::text AS "v"`)) as Array<{ v: string }>;
    expect(after).toBe(before);
  });

  it('a run created where there is no room wakes another replica at once (a notification, not its 60 s poll)', async () => {
    const notifications = a.app.get(DatabaseNotifications);
    const until = Date.now() + 5000;
    while (!notifications.live && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    if (process.env.OPENWOP_TEST_DB_MODE === 'embedded') {
      // The embedded engine delivers no notification to another connection: the replicas poll.
      expect(notifications.live).toBe(false);
      return;
    }
    expect(notifications.live).toBe(true);
    // b's one slot is taken by a slow run; its next run is inserted unclaimed and announced.
    const slow = await b.http('POST', '/v1/runs', { token: keyB, body: { workflowId: 'vendor.test.slow' } });
    expect(slow.status).toBe(201);
    const started = Date.now();
    const next = await b.http('POST', '/v1/runs', { token: keyB, body: { workflowId: 'vendor.test.one' } });
    expect(next.status).toBe(201);
    await waitForStatus(a, keyA, next.body.runId, ['completed'], 10_000);
    expect(Date.now() - started).toBeLessThan(2500);
    const [row] = (await a.ds.query(`SELECT "fence" FROM "run" WHERE "id" = $1`, [next.body.runId])) as Array<{ fence: number }>;
    expect(row.fence).toBe(1);
    await waitForStatus(b, keyB, slow.body.runId, ['completed']);
  });

  it('a follower on another replica is woken by the executing replica\'s writes (a notification, not its 500 ms poll)', async () => {
    if (process.env.OPENWOP_TEST_DB_MODE === 'embedded') return; // no notifications there: the follower polls
    await installChains(a, 'default', 'vendor.test.follow', { 'vendor.test.wait': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 700 } }, { id: 'after', typeId: 'core.noop', config: {} }], edges: [{ from: 'wait', to: 'after' }] } });
    const lags: number[] = [];
    for (let i = 0; i < 3; i++) {
      // Executed by b (claimed by its insert), followed by a long poll on a.
      const created = await b.http('POST', '/v1/runs', { token: keyB, body: { workflowId: 'vendor.test.wait' } });
      expect(created.status).toBe(201);
      const runId = created.body.runId as string;
      let last = 0;
      for (;;) {
        const r = await a.http('GET', `/v1/runs/${runId}/events/poll?lastSequence=${last}&timeout=5`, { token: keyA });
        expect(r.status).toBe(200);
        const arrived = Date.now();
        const done = (r.body.events as Array<{ type: string; timestamp: string; nodeId?: string }>).find((e) => e.type === 'node.completed' && e.nodeId === 'wait');
        if (done) {
          lags.push(arrived - new Date(done.timestamp).getTime());
          break;
        }
        last = r.body.lastSequence;
      }
      const [row] = (await a.ds.query(`SELECT "followed_until" > now() AS "followed" FROM "run" WHERE "id" = $1`, [runId])) as Array<{ followed: boolean }>;
      expect(row.followed).toBe(true);
      await waitForStatus(b, keyB, runId, ['completed']);
    }
    // Polling alone would leave each lag anywhere up to 500 ms.
    expect(lags.every((ms) => ms < 300)).toBe(true);
  });
});
