/**
 * A run's node rows keep no tenant (issue 41: bytes per run; migration 1765420000000): they are
 * their run's, reached through a run row read with the tenant. A replay's recorded outcomes are read
 * through the source run of the caller's tenant: another tenant's run id gives nothing. The
 * migration's `down` gives every node row its run's tenant again.
 */
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { RunNodeWithoutTenant1765420000000 } from '../../migrations/1765420000000-run-node-without-tenant';
import { recordedOutcomes } from '../../src/capabilities/runs/engine/run-store';
import { runMigrations } from '../../src/platform/database/migration-runner';
import { migrateUpTo, runOneMigration, useScratchDataSource } from '../support/scratch-db';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain, waitForStatus } from './run-kit';

const CHAIN = noopChain(3);
const columns = async (ds: DataSource) =>
  ((await ds.query(`SELECT "column_name" FROM information_schema.columns WHERE "table_name" = 'run_node' ORDER BY "ordinal_position"`)) as Array<{ column_name: string }>).map((c) => c.column_name);

describe('runs: node rows without a tenant', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key({ tenant: 'acme', scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'acme', 'vendor.test.noderows', { 'vendor.test.noderows3': CHAIN });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a completed 3-node run writes its node rows without a tenant; its recorded outcomes are read for its own tenant only', async () => {
    expect(await columns(t.ds)).not.toContain('tenant');
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.noderows3' } });
    expect(r.status).toBe(201);
    const runId = r.body.runId as string;
    await waitForStatus(t, key, runId, ['completed']);
    const rows = (await t.ds.query(`SELECT "node_id", "status" FROM "run_node" WHERE "run_id" = $1 ORDER BY "node_id"`, [runId])) as Array<{ node_id: string; status: string }>;
    expect(rows).toEqual(['n1', 'n2', 'n3'].map((node_id) => ({ node_id, status: 'completed' })));

    const own = await recordedOutcomes(t.ds, { runId, tenant: 'acme' });
    expect([...own.entries()].sort()).toEqual([['n1', { step: 1 }], ['n2', { step: 2 }], ['n3', { step: 3 }]]);
    expect((await recordedOutcomes(t.ds, { runId, tenant: 'globex' })).size).toBe(0);
  });
});

describe('the run node tenant migration', () => {
  const scratch = useScratchDataSource();

  it('drops the column, keeps the rows, and down gives every node row its run\'s tenant back', async () => {
    const ds = scratch.ds;
    const name = new RunNodeWithoutTenant1765420000000().name;
    const i = await migrateUpTo(ds, name);
    const ids: string[] = [];
    for (const tenant of ['acme', 'globex']) {
      const [{ id }] = (await ds.query(`INSERT INTO "run" ("tenant", "kind", "status", "metadata") VALUES ($1, 'workflow', 'completed', '{}') RETURNING "id"`, [tenant])) as Array<{ id: string }>;
      await ds.query(`INSERT INTO "run_node" ("run_id", "node_id", "tenant", "type_id", "status", "outputs") VALUES ($1, 'a', $2, 'core.noop', 'completed', '{"x":1}')`, [id, tenant]);
      ids.push(id);
    }
    const read = async () => (await ds.query(`SELECT "run_id", "node_id", "type_id", "status", "outputs" FROM "run_node" ORDER BY "run_id"`)) as unknown[];
    const before = await read();

    expect(await runMigrations(ds, MIGRATIONS.slice(i, i + 1))).toEqual([name]);
    expect(await columns(ds)).not.toContain('tenant');
    expect(await read()).toEqual(before);

    await runOneMigration(ds, new RunNodeWithoutTenant1765420000000(), 'down');
    const back = (await ds.query(`SELECT "run_id", "tenant" FROM "run_node" ORDER BY "run_id"`)) as Array<{ run_id: string; tenant: string }>;
    expect(back).toEqual(ids.map((run_id, k) => ({ run_id, tenant: ['acme', 'globex'][k] })).sort((a, b) => a.run_id.localeCompare(b.run_id)));
    const [{ is_nullable }] = (await ds.query(`SELECT "is_nullable" FROM information_schema.columns WHERE "table_name" = 'run_node' AND "column_name" = 'tenant'`)) as Array<{ is_nullable: string }>;
    expect(is_nullable).toBe('NO');
  });
});
