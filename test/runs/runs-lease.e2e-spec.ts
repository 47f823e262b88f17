/**
 * The run engine's leases are kept by the platform's lease keeper: one renewal for every run a
 * replica executes, a run whose lease another claim took is stopped at the next renewal (its node in
 * flight aborted, nothing more written), an operator's cancel is seen by the renewal, and a stopping
 * host hands back the leases of the runs it was executing.
 */
import { RunEngineService } from '../../src/capabilities/runs/engine/run-engine.service';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, runEvents, waitForStatus } from './run-kit';

describe('runs: leases kept by the lease keeper', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    // A short lease: renewed every 300 ms.
    // A short lease, but not so short that a renewal a saturated two-core machine delays loses it (900 ms did, once).
    t = await createTestApp({ configFile: { runs: { leaseMs: 1500, claimIntervalMs: 100 } } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    await installChains(t, 'default', 'vendor.test.leases', {
      'vendor.test.slow': {
        nodes: [
          { id: 'wait', typeId: 'core.delay', config: { ms: 4000 } },
          { id: 'after', typeId: 'core.noop', config: {} },
        ],
        edges: [{ from: 'wait', to: 'after' }],
      },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  async function start(): Promise<string> {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.slow' } });
    expect(r.status).toBe(201);
    return r.body.runId as string;
  }

  async function lease(runId: string): Promise<{ lease_owner: string | null; expires_in_ms: number | null; fence: number }> {
    const [row] = (await t.ds.query(
      `SELECT "lease_owner", (extract(epoch FROM "lease_expires_at" - now()) * 1000)::int AS "expires_in_ms", "fence" FROM "run" WHERE "id" = $1`,
      [runId],
    )) as Array<{ lease_owner: string | null; expires_in_ms: number | null; fence: number }>;
    return row;
  }

  it('renews the lease of a long node while it runs (the claim is never taken over)', async () => {
    const runId = await start();
    const engine = t.app.get(RunEngineService);
    await new Promise((r) => setTimeout(r, 3200));
    const l = await lease(runId);
    // Two lease lengths later the run is still this replica's, its lease a renewal away from expiring.
    expect(l.lease_owner).toBe(engine.owner);
    expect(l.expires_in_ms).toBeGreaterThan(0);
    expect(l.fence).toBe(1);
    await waitForStatus(t, key, runId, ['completed'], 15_000);
  });

  it('stops executing a run whose lease another claim took: nothing more is written under the lost claim', async () => {
    const runId = await start();
    const engine = t.app.get(RunEngineService);
    await waitForStatus(t, key, runId, ['running']);
    // Another replica's claim: a new owner and fence (as if this one had stalled past its lease).
    await t.ds.query(`UPDATE "run" SET "lease_owner" = 'another-replica', "fence" = "fence" + 1, "lease_expires_at" = now() + interval '1 hour' WHERE "id" = $1`, [runId]);
    const until = Date.now() + 3000;
    while (engine.activeCount() > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    // Stopped within a renewal or two, long before its 4 s node would have ended.
    expect(engine.activeCount()).toBe(0);
    await new Promise((r) => setTimeout(r, 4500));
    const types = (await runEvents(t, key, runId)).map((e) => e.type);
    expect(types).not.toContain('node.completed');
    expect(types).not.toContain('run.completed');
    expect((await lease(runId)).lease_owner).toBe('another-replica');
    // Hand the run back so the next test starts clean.
    await t.ds.query(`UPDATE "run" SET "status" = 'cancelled', "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = $1`, [runId]);
  });

  it("sees an operator's cancel recorded by another replica at the next renewal", async () => {
    const runId = await start();
    await waitForStatus(t, key, runId, ['running']);
    // The cancel flag as another replica's POST :cancel leaves it (this replica's engine is not told).
    await t.ds.query(`UPDATE "run" SET "cancel_requested" = true, "status" = 'cancelling' WHERE "id" = $1`, [runId]);
    const run = await waitForStatus(t, key, runId, ['cancelled'], 3000);
    expect(run.status).toBe('cancelled');
  });

  it('a stopping host hands back the leases of the runs it was executing', async () => {
    const other = await createTestApp({ configFile: { runs: { leaseMs: 60_000, claimIntervalMs: 100 } } });
    try {
      const otherKey = await other.key({ scopes: ['runs:create', 'runs:read'] });
      await installChains(other, 'default', 'vendor.test.leases', {
        'vendor.test.slow': { nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: 10_000 } }] },
      });
      const r = await other.http('POST', '/v1/runs', { token: otherKey, body: { workflowId: 'vendor.test.slow' } });
      await waitForStatus(other, otherKey, r.body.runId, ['running']);
      const owner = other.app.get(RunEngineService).owner;
      const [before] = (await other.ds.query(`SELECT "lease_owner" FROM "run" WHERE "id" = $1`, [r.body.runId])) as Array<{ lease_owner: string | null }>;
      expect(before.lease_owner).toBe(owner);
      // The engine's part of the host's shutdown (the database stays open to look at the row).
      await other.app.get(RunEngineService).onApplicationShutdown();
      const [after] = (await other.ds.query(`SELECT "lease_owner", "status" FROM "run" WHERE "id" = $1`, [r.body.runId])) as Array<{ lease_owner: string | null; status: string }>;
      expect(after).toEqual({ lease_owner: null, status: 'running' });
    } finally {
      await other.close();
    }
  });
});
