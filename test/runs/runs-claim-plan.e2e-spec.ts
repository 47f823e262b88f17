/**
 * The engine's claim with backlogs: it reads each tenant's claimable runs straight from
 * `run_claim_tenant_idx` (no sort of a backlog, a handful of rows read for 32 claimed, whatever the
 * backlog), takes the oldest first within a tenant and skips leased ones, shares the slots between
 * tenants with backlogs (a tenant with 10,000 queued runs does not hold back another's single run),
 * and keeps a tenant at its cap of active runs (OPENWOP_TENANT_MAX_ACTIVE_RUNS).
 */
import { CLAIM_RUNS_SQL } from '../../src/capabilities/runs/engine/run-engine.service';
import { createTestApp, TestApp } from '../support/test-app';

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

function nodes(p: PlanNode): PlanNode[] {
  return [p, ...(p.Plans ?? []).flatMap(nodes)];
}

describe('runs: the claim with a backlog', () => {
  let t: TestApp;
  const seed = (tenant: string, n: number, from: string) =>
    t.ds.query(
      `INSERT INTO "run" ("tenant", "principal", "kind", "status", "metadata", "workflow_id", "definition_key", "inputs", "configurable", "principal_key", "created_at")
       SELECT $1, 'tester', 'workflow', CASE WHEN i % 2 = 0 THEN 'pending' ELSE 'completed' END, '{}'::jsonb, 'w', run_definition_ref($1, '{"nodes": [], "edges": []}'::jsonb), '{}'::jsonb, '{}'::jsonb, run_principal_ref($1, NULL, '{}'::text[]),
              $3::timestamptz + i * interval '1 second'
       FROM generate_series(1, $2::int) AS i`,
      [tenant, n, from],
    );
  const claim = async (owner: string, limit: number, cap: number | null = null) =>
    ((await t.ds.query(CLAIM_RUNS_SQL, [owner, 30_000, limit, cap])) as [Array<{ id: string; tenant: string }>, number])[0];

  beforeAll(async () => {
    // The engine stays idle: this test claims by hand.
    t = await createTestApp({ env: { OPENWOP_SCHEDULER_ENABLED: 'false' } });
    // 20,000 finished runs and 20,000 pending ones of one tenant, the oldest pending first by created_at.
    await seed('default', 40000, '2026-01-01');
    await t.ds.query('ANALYZE "run"');
  });

  afterAll(async () => {
    await t?.close();
  });

  async function plan(params: unknown[]): Promise<PlanNode[]> {
    // EXPLAIN ANALYZE executes the claim: inside a transaction that is rolled back.
    const qr = t.ds.createQueryRunner();
    await qr.startTransaction();
    try {
      const [row] = (await qr.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM_RUNS_SQL}`, params)) as Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>;
      return nodes(row['QUERY PLAN'][0].Plan);
    } finally {
      await qr.rollbackTransaction();
      await qr.release();
    }
  }

  /** No sequential scan, no sort of more rows than the claim offers, and the backlog read through the tenant index, a few rows per claimed run. */
  function expectBounded(all: PlanNode[], limit: number, tenants: number): void {
    expect(all.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    for (const s of all.filter((n) => n['Node Type'] === 'Sort')) expect(s['Actual Rows']! * (s['Actual Loops'] ?? 1)).toBeLessThanOrEqual(limit * tenants);
    const scans = all.filter((n) => n['Index Name'] === 'run_claim_tenant_idx');
    expect(scans.length).toBeGreaterThan(0);
    const read = scans.reduce((a, n) => a + n['Actual Rows']! * (n['Actual Loops'] ?? 1), 0);
    expect(read).toBeLessThanOrEqual(2 * limit * tenants + 2 * tenants + 4);
  }

  it('reads the tenant index in claim order: no sort of the backlog, only a handful of rows read for 32 claimed', async () => {
    expectBounded(await plan(['plan-test', 30_000, 32, null]), 32, 1);
  });

  it('claims the oldest claimable runs first and skips leased ones', async () => {
    const oldest = (await t.ds.query(`SELECT "id" FROM "run" WHERE "status" = 'pending' ORDER BY "created_at" LIMIT 5`)) as Array<{ id: string }>;
    // The oldest is leased by someone else until later: it is not claimable.
    await t.ds.query(`UPDATE "run" SET "lease_owner" = 'other', "lease_expires_at" = now() + interval '1 hour' WHERE "id" = $1`, [oldest[0].id]);
    const claimed = await claim('order-test', 4);
    const rows = (await t.ds.query(`SELECT "id", "lease_owner" FROM "run" WHERE "id" = ANY($1::uuid[]) ORDER BY "created_at"`, [claimed.map((r) => r.id)])) as Array<{ id: string; lease_owner: string }>;
    expect(rows.map((r) => r.id)).toEqual(oldest.slice(1).map((r) => r.id));
    expect(rows.every((r) => r.lease_owner === 'order-test')).toBe(true);
  });

  it('shares the slots between tenants with backlogs: another tenant\'s single, newer run is taken by a claim of one', async () => {
    // `flood` queued 10,000 runs long before `late` queued its one; `default` (above) holds 5 runs already.
    await seed('flood', 20000, '2025-06-01');
    await seed('late', 2, '2026-06-01');
    await t.ds.query('ANALYZE "run"');
    const first = await claim('fair-test', 1);
    // The tenant with the fewest active runs goes first: `flood` and `late` have none, `flood`'s run is older.
    expect(first.map((r) => r.tenant)).toEqual(['flood']);
    // Now `late` has fewer active runs than `flood`: its run is next, ahead of 9,999 older ones.
    expect((await claim('fair-test', 1)).map((r) => r.tenant)).toEqual(['late']);
    expectBounded(await plan(['plan-test', 30_000, 32, null]), 32, 3);
    // Under a cap too (a LIMIT that depended on the tenant's count was planned as a sort of its whole backlog).
    expectBounded(await plan(['plan-test', 30_000, 32, 1000]), 32, 3);
    expectBounded(await plan(['plan-test', 30_000, 32, 3]), 32, 3);
  });

  it('keeps a tenant at its cap of active runs and gives the free slots to the others', async () => {
    // `flood` has 1 active run (claimed above), `late` none left to claim, `default` those claimed above: under a cap of 3 each tops up to 3.
    const [{ n: defaultActive }] = (await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "tenant" = 'default' AND "lease_owner" IS NOT NULL AND "lease_expires_at" > now() AND "status" = 'pending'`)) as Array<{ n: number }>;
    const got = await claim('cap-test', 32, 3);
    const by = (tenant: string) => got.filter((r) => r.tenant === tenant).length;
    expect(by('flood')).toBe(2);
    expect(by('default')).toBe(Math.max(0, 3 - defaultActive));
    expect(await claim('cap-test', 32, 3)).toEqual([]);
    // A finished run frees a slot of its tenant: the next claim takes one more of that tenant.
    await t.ds.query(`UPDATE "run" SET "status" = 'completed', "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = $1`, [got.find((r) => r.tenant === 'flood')!.id]);
    expect((await claim('cap-test', 32, 3)).map((r) => r.tenant)).toEqual(['flood']);
  });
});
