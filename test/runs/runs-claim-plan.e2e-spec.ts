/**
 * The engine's claim reads the oldest claimable runs straight from `run_claimable_idx`: with a large
 * backlog it neither sorts nor scans it (it used to sort every claimable run on every claim), and it
 * still takes the oldest first and skips leased ones.
 */
import { CLAIM_RUNS_SQL } from '../../src/capabilities/runs/engine/run-engine.service';
import { createTestApp, TestApp } from '../support/test-app';

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  Plans?: PlanNode[];
}

function nodes(p: PlanNode): PlanNode[] {
  return [p, ...(p.Plans ?? []).flatMap(nodes)];
}

describe('runs: the claim with a backlog', () => {
  let t: TestApp;

  beforeAll(async () => {
    // The engine stays idle: this test claims by hand.
    t = await createTestApp({ env: { OPENWOP_SCHEDULER_ENABLED: 'false' } });
    // 20,000 finished runs and 20,000 pending ones, the oldest pending first by created_at.
    await t.ds.query(
      `INSERT INTO "run" ("tenant", "principal", "kind", "status", "metadata", "workflow_id", "definition", "inputs", "configurable", "scopes", "created_at")
       SELECT 'default', 'tester', 'workflow', CASE WHEN i % 2 = 0 THEN 'pending' ELSE 'completed' END, '{}'::jsonb, 'w', '{"nodes": [], "edges": []}'::jsonb, '{}'::jsonb, '{}'::jsonb, '{}'::text[],
              timestamptz '2026-01-01' + i * interval '1 second'
       FROM generate_series(1, 40000) AS i`,
    );
    await t.ds.query('ANALYZE "run"');
  });

  afterAll(async () => {
    await t?.close();
  });

  it('uses the claim-order index: no sort, and only a handful of rows read for 32 claimed', async () => {
    // EXPLAIN ANALYZE executes the claim: inside a transaction that is rolled back.
    const qr = t.ds.createQueryRunner();
    await qr.startTransaction();
    try {
      const [row] = (await qr.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM_RUNS_SQL}`, ['plan-test', 30_000, 32])) as Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>;
      const all = nodes(row['QUERY PLAN'][0].Plan);
      expect(all.some((n) => n['Node Type'] === 'Sort')).toBe(false);
      const scan = all.find((n) => n['Index Name'] === 'run_claimable_idx');
      expect(scan).toBeDefined();
      expect(scan!['Actual Rows']).toBeLessThanOrEqual(64);
    } finally {
      await qr.rollbackTransaction();
      await qr.release();
    }
  });

  it('claims the oldest claimable runs first and skips leased ones', async () => {
    const oldest = (await t.ds.query(`SELECT "id" FROM "run" WHERE "status" = 'pending' ORDER BY "created_at" LIMIT 5`)) as Array<{ id: string }>;
    // The oldest is leased by someone else until later: it is not claimable.
    await t.ds.query(`UPDATE "run" SET "lease_owner" = 'other', "lease_expires_at" = now() + interval '1 hour' WHERE "id" = $1`, [oldest[0].id]);
    const claimed = (await t.ds.query(CLAIM_RUNS_SQL, ['order-test', 30_000, 4])) as [Array<{ id: string }>, number];
    const rows = (await t.ds.query(`SELECT "id", "lease_owner" FROM "run" WHERE "id" = ANY($1::uuid[]) ORDER BY "created_at"`, [claimed[0].map((r) => r.id)])) as Array<{ id: string; lease_owner: string }>;
    expect(rows.map((r) => r.id)).toEqual(oldest.slice(1).map((r) => r.id));
    expect(rows.every((r) => r.lease_owner === 'order-test')).toBe(true);
  });
});
