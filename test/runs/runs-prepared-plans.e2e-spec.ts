/**
 * The engine's hot statements run on sessions that plan them once, generically, and keep the plan
 * while the tables' statistics stand. A plan made while the run table was nearly empty (a fresh
 * install, a truncate) used to scan the whole table at every write and claim for as long as it
 * lived; these sessions plan without sequential scans, so they reach the run rows by key. (The
 * embedded engine has no such sessions: its connections share one and name no statements.)
 */
import { randomUUID } from 'node:crypto';
import { CLAIM_RUNS_SQL, flushValues, FLUSH_SQL } from '../../src/capabilities/runs/engine/run-store';
import { preparedStatement, runPrepared } from '../../src/platform/database/prepared-statement';
import { createTestApp, TestApp } from '../support/test-app';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

const nodes = (p: PlanNode): PlanNode[] => [p, ...(p.Plans ?? []).flatMap(nodes)];

const EXPLAIN_FLUSH = preparedStatement('test_explain_flush', `EXPLAIN (FORMAT JSON) ${FLUSH_SQL}`);
const EXPLAIN_CLAIM = preparedStatement('test_explain_claim', `EXPLAIN (FORMAT JSON) ${CLAIM_RUNS_SQL}`);

const onServer = process.env.OPENWOP_TEST_DB_MODE === 'embedded' ? describe.skip : describe;

onServer('runs: the plans of the prepared statements', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_SCHEDULER_ENABLED: 'false' } });
  });

  afterAll(async () => {
    await t?.close();
  });

  async function scansOfRun(stmt: typeof EXPLAIN_FLUSH, values: unknown[]): Promise<string[]> {
    const [row] = await runPrepared<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(t.ds, stmt, values);
    return nodes(row['QUERY PLAN'][0].Plan)
      .filter((n) => n['Relation Name'] === 'run')
      .map((n) => n['Node Type']);
  }

  it('reaches the run rows by key on a run table with a single row', async () => {
    const [{ id }] = (await t.ds.query(
      `INSERT INTO "run" ("tenant", "principal", "kind", "status", "metadata", "workflow_id", "definition_key", "inputs", "configurable", "principal_key", "lease_owner", "fence")
       VALUES ('acme', 'tester', 'workflow', 'running', '{}'::jsonb, 'w', run_definition_ref('acme', '{"nodes": [], "edges": []}'::jsonb), '{}'::jsonb, '{}'::jsonb, run_principal_ref('acme', NULL, '{}'::text[]), 'plan-test', 1) RETURNING "id"`,
    )) as Array<{ id: string }>;
    const flush = {
      runId: id,
      owner: 'plan-test',
      fence: 1,
      tenant: 'acme',
      workspace: null,
      leaseMs: 30_000,
      nodeExecutions: 1,
      costUsd: 0,
      update: { status: 'completed', outputs: {}, terminal: true },
      writes: [{ nodeId: 'a', typeId: 'core.noop', status: 'completed' as const, attempt: 0, outputs: {} }],
      events: [{ type: 'run.completed', payload: { outputs: {} } }],
      eventIds: [randomUUID()],
    };
    // The write (with a claim folded in), and a claim pass.
    const write = await scansOfRun(EXPLAIN_FLUSH, flushValues([flush], { owner: 'plan-test', leaseMs: 30_000, limit: 4 }));
    const claim = await scansOfRun(EXPLAIN_CLAIM, ['plan-test', 30_000, 4, null]);
    expect(write.length).toBeGreaterThan(0);
    expect(claim.length).toBeGreaterThan(0);
    expect(write).not.toContain('Seq Scan');
    expect(claim).not.toContain('Seq Scan');
  });
});
