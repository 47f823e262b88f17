/**
 * The newcomers' statements with one tenant's backlog (docs/operations.md §Fair scheduling): the claim
 * of a named run, the fair claim with a cap of one, and the check an insert makes before it takes the
 * reserve read a handful of index entries for a quiet tenant's run, not the flooding tenant's 10,000
 * queued runs. Planned as the engine's sessions plan them (generically, once: a tenant is a parameter
 * or a column, rated at one over the number of tenants, so with two tenants a scan of every claimable
 * run in age order looked as cheap as the tenant's own entries and read the whole backlog).
 */
import { CLAIM_NAMED_NEWCOMERS_SQL } from '../../src/capabilities/runs/engine/run-newcomer-claim';
import { noRunOf } from '../../src/capabilities/runs/engine/run-claim-sql';
import { CLAIM_RUNS_SQL } from '../../src/capabilities/runs/engine/run-store';
import { preparedStatement, runPrepared } from '../../src/platform/database/prepared-statement';
import { createTestApp, TestApp } from '../support/test-app';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

const nodes = (p: PlanNode): PlanNode[] => [p, ...(p.Plans ?? []).flatMap(nodes)];

const explain = (name: string, sql: string) => preparedStatement(`test_explain_${name}`, `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`);
const EXPLAIN_NAMED = explain('named_newcomers', CLAIM_NAMED_NEWCOMERS_SQL);
const EXPLAIN_FAIR = explain('fair_newcomers', CLAIM_RUNS_SQL);
const EXPLAIN_FIRST = explain('first_run', `SELECT ${noRunOf('$1::text')} AS "first"`);

const onServer = process.env.OPENWOP_TEST_DB_MODE === 'embedded' ? describe.skip : describe;

onServer("runs: the newcomers' statements with another tenant's backlog", () => {
  let t: TestApp;
  const BACKLOG = 10_000;

  const seed = (tenant: string, n: number, status: 'pending' | 'completed', leased = false) =>
    t.ds.query(
      `INSERT INTO "run" ("tenant", "principal", "kind", "status", "metadata", "workflow_id", "definition_key", "inputs", "configurable", "principal_key", "lease_owner", "lease_expires_at", "fence")
       SELECT $1, 'tester', 'workflow', $3, '{}'::jsonb, 'w', run_definition_ref($1, '{"nodes": [], "edges": []}'::jsonb), '{}'::jsonb, '{}'::jsonb, run_principal_ref($1, NULL, '{}'::text[]),
              ${leased ? `'busy-replica', now() + interval '1 hour', 1` : 'NULL, NULL, 0'}
       FROM generate_series(1, $2::int) RETURNING "id"`,
      [tenant, n, status],
    ) as Promise<Array<{ id: string }>>;

  /** Index entries of the run table the statement read (rows returned and rows its filters removed), and its scans of the table. */
  async function reads(stmt: ReturnType<typeof explain>, values: unknown[]): Promise<{ entries: number; scans: string[] }> {
    // EXPLAIN ANALYZE executes a claim: inside a transaction that is rolled back, its session set as
    // the engine's sessions are (data-source.factory.ts, openPreparedPool).
    const qr = t.ds.createQueryRunner();
    await qr.startTransaction();
    try {
      await qr.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
      await qr.query(`SET LOCAL enable_seqscan = off`);
      const [row] = await runPrepared<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(qr.manager, stmt, values);
      const all = nodes(row['QUERY PLAN'][0].Plan).filter((n) => n['Relation Name'] === 'run');
      const entries = all
        .filter((n) => n['Index Name'] !== undefined)
        .reduce((a, n) => a + ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 1), 0);
      return { entries, scans: all.map((n) => `${n['Node Type']}${n['Index Name'] ? ` ${n['Index Name']}` : ''}`) };
    } finally {
      await qr.rollbackTransaction();
      await qr.release();
    }
  }

  let quiet: string;
  let flooding: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_SCHEDULER_ENABLED: 'false' } });
    // The flood: runs executing on a replica (their leases in force), 10,000 queued behind them, and
    // its finished history; the quiet tenant: its history and one queued run.
    await seed('flood', 20_000, 'completed');
    await seed('flood', 64, 'pending', true);
    flooding = (await seed('flood', BACKLOG, 'pending'))[5000].id;
    await seed('quiet', 5_000, 'completed');
    quiet = (await seed('quiet', 1, 'pending'))[0].id;
    await t.ds.query('ANALYZE "run"');
  });

  afterAll(async () => {
    await t?.close();
  });

  it("claims a quiet tenant's named run by its key, reading a handful of entries", async () => {
    const r = await reads(EXPLAIN_NAMED, [[quiet], 'plan-test', 30_000, 4]);
    expect(r.scans).not.toContain('Seq Scan');
    expect(r.entries).toBeLessThanOrEqual(10);
  });

  it("looks up a flooding tenant's named run without reading its backlog (only the runs it executes)", async () => {
    const r = await reads(EXPLAIN_NAMED, [[flooding], 'plan-test', 30_000, 4]);
    expect(r.scans).not.toContain('Seq Scan');
    expect(r.entries).toBeLessThanOrEqual(64 + 10);
  });

  it('the fair claim with a cap of one reads each tenant from its first entry, not the backlog in age order', async () => {
    const r = await reads(EXPLAIN_FAIR, ['plan-test', 30_000, 4, 1]);
    expect(r.scans).not.toContain('Seq Scan');
    // Two tenants: their entries up to the claim's size each, the flood's runs executing skipped, the active counts.
    expect(r.entries).toBeLessThanOrEqual(2 * 64 + 4 * 4 + 10);
  });

  it("an insert's check that its run is its tenant's first reads one entry, for a quiet tenant and for the flooding one", async () => {
    for (const tenant of ['quiet', 'flood', 'newcomer']) {
      const r = await reads(EXPLAIN_FIRST, [tenant]);
      expect(r.scans).not.toContain('Seq Scan');
      expect(r.entries).toBeLessThanOrEqual(2);
    }
  });
});
