/**
 * The engine's one write path on a real database: the flushes of several runs in one prepared
 * statement keep each run's own fence (a run whose claim lost its lease writes nothing while the
 * others are written), and a node already completed aborts the statement as a whole. The prepared
 * statements are also checked to survive a migration that adds a column under them.
 */
import { randomUUID } from 'node:crypto';
import { claimRuns, FlushParams, flushRuns, NodeAlreadyCompleted } from '../../src/capabilities/runs/engine/run-store';
import { createTestApp, TestApp } from '../support/test-app';

describe('runs: the multi-run flush statement', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_SCHEDULER_ENABLED: 'false' } });
  });

  afterAll(async () => {
    await t?.close();
  });

  async function pendingRuns(n: number): Promise<string[]> {
    const rows = (await t.ds.query(
      // One millisecond apart, in the order returned: the claim order is creation order.
      `INSERT INTO "run" ("tenant", "principal", "kind", "status", "metadata", "workflow_id", "definition_key", "inputs", "configurable", "principal_key", "created_at")
       SELECT 'acme', 'tester', 'workflow', 'pending', '{}'::jsonb, 'w', run_definition_ref('acme', '{"nodes": [], "edges": []}'::jsonb), '{}'::jsonb, '{}'::jsonb, run_principal_ref('acme', NULL, '{}'::text[]), now() + i * interval '1 millisecond'
       FROM generate_series(1, $1::int) AS i ORDER BY i RETURNING "id"`,
      [n],
    )) as Array<{ id: string }>;
    return rows.map((r) => r.id);
  }

  function completion(runId: string, owner: string, fence: number): FlushParams {
    return {
      runId,
      owner,
      fence,
      tenant: 'acme',
      workspace: null,
      leaseMs: 30_000,
      nodeExecutions: 1,
      costUsd: 0,
      update: { status: 'completed', outputs: { a: { ok: true } }, terminal: true },
      writes: [
        { nodeId: 'a', typeId: 'core.noop', status: 'running', attempt: 0 },
        { nodeId: 'a', typeId: 'core.noop', status: 'completed', attempt: 0, outputs: { ok: true } },
      ],
      events: [
        { type: 'node.completed', nodeId: 'a', payload: { nodeId: 'a', outputs: { ok: true } } },
        { type: 'run.completed', payload: { outputs: { a: { ok: true } } } },
      ],
      eventIds: [randomUUID(), randomUUID()],
    };
  }

  async function state(runId: string) {
    const [run] = (await t.ds.query(`SELECT "status", "lease_owner", "outputs", "completed_at" FROM "run" WHERE "id" = $1`, [runId])) as Array<{ status: string; lease_owner: string | null; outputs: unknown; completed_at: Date | null }>;
    const nodes = (await t.ds.query(`SELECT "node_id", "status" FROM "run_node" WHERE "run_id" = $1`, [runId])) as Array<{ node_id: string; status: string }>;
    const events = (await t.ds.query(`SELECT "event_type_name"("code", "type") AS "type", "sequence"::int AS "sequence" FROM "event" WHERE "stream_key" = (SELECT "key" FROM "event_stream" WHERE "stream_id" = $1) ORDER BY "sequence"`, [runId])) as Array<{ type: string; sequence: number }>;
    return { run, nodes, events };
  }

  it('writes every run whose claim holds, and nothing of a run whose fence moved on', async () => {
    const ids = await pendingRuns(3);
    const claimed = await claimRuns(t.ds, { owner: 'replica-a', leaseMs: 30_000, limit: 3 });
    expect(claimed.map((c) => c.id).sort()).toEqual([...ids].sort());
    const fence = new Map(claimed.map((c) => [c.id, c.fence]));
    // The third run's lease was taken over meanwhile (another replica's claim bumped its fence).
    await t.ds.query(`UPDATE "run" SET "lease_owner" = 'replica-b', "fence" = "fence" + 1 WHERE "id" = $1`, [ids[2]]);

    const { results } = await flushRuns(t.ds, ids.map((id) => completion(id, 'replica-a', fence.get(id)!)));
    expect(results.map((r) => r.fenced)).toEqual([true, true, false]);

    for (const id of ids.slice(0, 2)) {
      const s = await state(id);
      expect(s.run).toMatchObject({ status: 'completed', lease_owner: null, outputs: { a: { ok: true } } });
      expect(s.run.completed_at).not.toBeNull();
      expect(s.nodes).toEqual([{ node_id: 'a', status: 'completed' }]);
      expect(s.events).toEqual([
        { type: 'node.completed', sequence: 1 },
        { type: 'run.completed', sequence: 2 },
      ]);
    }
    const lost = await state(ids[2]);
    expect(lost.run).toMatchObject({ status: 'pending', lease_owner: 'replica-b' });
    expect(lost.nodes).toEqual([]);
    expect(lost.events).toEqual([]);
  });

  it('a node already completed aborts the whole statement: nothing of any run in it is written', async () => {
    const ids = await pendingRuns(2);
    const claimed = await claimRuns(t.ds, { owner: 'replica-c', leaseMs: 30_000, limit: 2 });
    const fence = new Map(claimed.map((c) => [c.id, c.fence]));
    await t.ds.query(`INSERT INTO "run_node" ("run_id", "node_id", "status", "attempt") VALUES ($1, 'a', 'completed', 0)`, [ids[1]]);
    await expect(flushRuns(t.ds, ids.map((id) => completion(id, 'replica-c', fence.get(id)!)))).rejects.toBeInstanceOf(NodeAlreadyCompleted);
    const first = await state(ids[0]);
    expect(first.run.status).toBe('pending');
    expect(first.events).toEqual([]);
    // On its own, the healthy run is written (the engine's batcher retries flush by flush).
    expect((await flushRuns(t.ds, [completion(ids[0], 'replica-c', fence.get(ids[0])!)])).results[0].fenced).toBe(true);
    expect((await state(ids[0])).run.status).toBe('completed');
  });

  it('keeps working on connections that prepared it before a migration added a column to the run table', async () => {
    // Prepare the statements on the pool's connections, then change the table under them.
    const warm = await pendingRuns(1);
    const [first] = await claimRuns(t.ds, { owner: 'replica-d', leaseMs: 30_000, limit: 1 });
    expect(first.id).toBe(warm[0]);
    await t.ds.query(`ALTER TABLE "run" ADD COLUMN "added_later" text`);
    try {
      const ids = await pendingRuns(1);
      const claimed = await claimRuns(t.ds, { owner: 'replica-d', leaseMs: 30_000, limit: 2 });
      expect(claimed.map((c) => c.id)).toEqual(ids);
      expect(Object.keys(claimed[0])).not.toContain('added_later');
      const { results } = await flushRuns(t.ds, [completion(first.id, 'replica-d', first.fence), completion(ids[0], 'replica-d', claimed[0].fence)]);
      expect(results.map((r) => r.fenced)).toEqual([true, true]);
    } finally {
      await t.ds.query(`ALTER TABLE "run" DROP COLUMN "added_later"`);
    }
  });

  it('claims for the slots it frees in the same statement: the oldest claimable runs, never one it writes, at most its limit', async () => {
    await t.ds.query(`UPDATE "run" SET "status" = 'cancelled', "lease_owner" = NULL WHERE "status" IN ('pending', 'running')`);
    const ids = await pendingRuns(4);
    const [written] = await claimRuns(t.ds, { owner: 'replica-e', leaseMs: 30_000, limit: 1 });
    expect(written.id).toBe(ids[0]);
    // Its lease has run out meanwhile: claimable, but it is the run being written, never claimed by its own write.
    await t.ds.query(`UPDATE "run" SET "lease_expires_at" = now() - interval '1 second' WHERE "id" = $1`, [written.id]);
    const out = await flushRuns(t.ds, [completion(written.id, 'replica-e', written.fence)], { owner: 'replica-e', leaseMs: 30_000, limit: 2 });
    expect(out.results[0].fenced).toBe(true);
    expect(out.claimed.map((c) => c.id)).toEqual(ids.slice(1, 3));
    for (const c of out.claimed) {
      expect(c).toMatchObject({ tenant: 'acme', status: 'pending', fence: 1, cancel_requested: false, definition: { nodes: [], edges: [] }, scopes: [] });
      expect(c.started_at).toBeNull();
    }
    const leases = (await t.ds.query(`SELECT "id", "lease_owner", "status" FROM "run" WHERE "id" = ANY($1::uuid[]) ORDER BY "created_at", "id"`, [ids])) as Array<{ id: string; lease_owner: string | null; status: string }>;
    const byId = new Map(leases.map((l) => [l.id, l]));
    expect(byId.get(ids[0])).toMatchObject({ status: 'completed', lease_owner: null });
    expect(byId.get(ids[1])!.lease_owner).toBe('replica-e');
    expect(byId.get(ids[2])!.lease_owner).toBe('replica-e');
    expect(byId.get(ids[3])!.lease_owner).toBeNull();
    // With no limit nothing is claimed.
    const none = await flushRuns(t.ds, [completion(ids[1], 'replica-e', 1)]);
    expect(none.claimed).toEqual([]);
  });
});
