/**
 * The run engine's metrics: `openwop_runs` (runs in progress by status, all tenants, at scrape time),
 * `openwop_runs_finished_total` (runs this replica finished, by final status) and node executions by
 * typeId and outcome.
 */
import { ACTIVE_RUNS_SQL } from '../../src/capabilities/runs/runs.metrics';
import { parsePrometheusText, Sample, valueOf } from '../operations/prometheus-text';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain, waitForStatus } from './run-kit';

describe('runs: metrics', () => {
  let t: TestApp;
  let monitor: string;
  let a: string;
  let b: string;

  beforeAll(async () => {
    t = await createTestApp();
    monitor = await t.key({ principal: 'prometheus', roles: ['monitor'] });
    a = await t.key({ tenant: 'acme', scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    b = await t.key({ tenant: 'globex', scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    for (const tenant of ['acme', 'globex']) {
      await installChains(t, tenant, 'vendor.test.metrics', {
        'vendor.test.three': noopChain(3),
        'vendor.test.broken': { nodes: [{ id: 'a', typeId: 'core.noop' }, { id: 'call', typeId: 'core.tool', config: { toolId: 'mcp:nobody.nothing' } }], edges: [{ from: 'a', to: 'call' }] },
        'vendor.test.gated': { nodes: [{ id: 'gate', typeId: 'core.approval' }] },
      });
    }
  });
  afterAll(() => t.close());

  const scrape = async (): Promise<Sample[]> => {
    const res = await t.http('GET', '/metrics', { token: monitor });
    expect(res.status).toBe(200);
    return parsePrometheusText(res.text);
  };
  const start = async (token: string, workflowId: string) => (await t.http('POST', '/v1/runs', { token, body: { workflowId } })).body.runId as string;

  it('declares the families, every status at 0 before any run, never with a tenant label', async () => {
    const samples = await scrape();
    for (const status of ['pending', 'running', 'waiting-approval', 'cancelling']) {
      const g = samples.find((x) => x.name === 'openwop_runs' && x.labels.status === status);
      expect([status, g?.value]).toEqual([status, 0]);
    }
    for (const status of ['completed', 'failed', 'cancelled']) {
      const c = samples.find((x) => x.name === 'openwop_runs_finished_total' && x.labels.status === status);
      expect([status, c?.value]).toEqual([status, 0]);
      // A final status is a counter, not a gauge that would count every run ever finished on each scrape.
      expect(samples.some((x) => x.name === 'openwop_runs' && x.labels.status === status)).toBe(false);
    }
    expect(samples.filter((x) => x.name.startsWith('openwop_run')).every((x) => !('tenant' in x.labels))).toBe(true);
    const res = await t.http('GET', '/metrics', { token: monitor });
    expect(res.text).toMatch(/# TYPE openwop_runs gauge/);
    expect(res.text).toMatch(/# TYPE openwop_runs_finished_total counter/);
    expect(res.text).toMatch(/# TYPE openwop_run_node_executions_total counter/);
  });

  it('counts runs in progress of every tenant at scrape time, runs finished by final status, and node executions by typeId and outcome', async () => {
    const before = await scrape();
    const node = (samples: Sample[], typeId: string, outcome: string) => valueOf(samples, 'openwop_run_node_executions_total', { type_id: typeId, outcome });
    const finished = (samples: Sample[], status: string) => valueOf(samples, 'openwop_runs_finished_total', { status });

    const completed = [await start(a, 'vendor.test.three'), await start(a, 'vendor.test.three'), await start(b, 'vendor.test.three')];
    const failed = [await start(b, 'vendor.test.broken')];
    const parked = [await start(a, 'vendor.test.gated'), await start(b, 'vendor.test.gated')];
    for (const id of completed) await waitForStatus(t, id === completed[2] ? b : a, id, ['completed']);
    await waitForStatus(t, b, failed[0], ['failed']);
    await waitForStatus(t, a, parked[0], ['waiting-approval']);
    await waitForStatus(t, b, parked[1], ['waiting-approval']);

    const mid = await scrape();
    expect(finished(mid, 'completed') - finished(before, 'completed')).toBe(3);
    expect(finished(mid, 'failed') - finished(before, 'failed')).toBe(1);
    expect(valueOf(mid, 'openwop_runs', { status: 'waiting-approval' })).toBe(2);
    expect(valueOf(mid, 'openwop_runs', { status: 'running' })).toBe(0);
    expect(node(mid, 'core.noop', 'completed') - node(before, 'core.noop', 'completed')).toBe(3 * 3 + 1);
    expect(node(mid, 'core.tool', 'failed') - node(before, 'core.tool', 'failed')).toBe(1);
    expect(node(mid, 'core.approval', 'suspended') - node(before, 'core.approval', 'suspended')).toBe(2);

    // The gauge follows the database: cancelling a parked run takes it out of waiting-approval, and it is counted cancelled.
    expect((await t.http('POST', `/v1/runs/${parked[0]}/cancel`, { token: a })).body.status).toBe('cancelled');
    const after = await scrape();
    expect(valueOf(after, 'openwop_runs', { status: 'waiting-approval' })).toBe(1);
    expect(finished(after, 'cancelled') - finished(before, 'cancelled')).toBe(1);
    const [db] = await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "kind" = 'workflow' AND "status" IN ('pending', 'running', 'waiting-approval', 'cancelling')`);
    expect(after.filter((x) => x.name === 'openwop_runs').reduce((sum, x) => sum + x.value, 0)).toBe(db.n);
    const [done] = await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "kind" = 'workflow' AND "status" IN ('completed', 'failed', 'cancelled')`);
    expect(['completed', 'failed', 'cancelled'].reduce((sum, st) => sum + finished(after, st), 0)).toBe(done.n);
  });

  it('the in-progress count reads the status index, not every run ever finished', async () => {
    await t.ds.query(
      `INSERT INTO "run" ("tenant", "principal", "kind", "status", "metadata", "workflow_id", "definition_key", "inputs", "configurable", "principal_key")
       SELECT 'acme', 'bulk', 'workflow', 'completed', '{}'::jsonb, 'w', run_definition_ref('acme', '{"nodes": [], "edges": []}'::jsonb), '{}'::jsonb, '{}'::jsonb, run_principal_ref('acme', NULL, '{}'::text[]) FROM generate_series(1, 20000)`,
    );
    await t.ds.query('ANALYZE "run"');
    const [plan] = (await t.ds.query(`EXPLAIN (FORMAT JSON) ${ACTIVE_RUNS_SQL}`)) as Array<{ 'QUERY PLAN': unknown }>;
    const text = JSON.stringify(plan['QUERY PLAN']);
    expect(text).not.toContain('"Seq Scan"');
    expect(text).toContain('run_active_idx');
    // The gauge is unmoved by the 20,000 finished runs.
    expect(valueOf(await scrape(), 'openwop_runs', { status: 'waiting-approval' })).toBe(1);
  });
});
