/**
 * A node row is its run's node state only (issue 41: bytes per run; migration 1765430020000): no type
 * (the run's stored definition has it), the status as the enum `run_node_status`, and no dropped column
 * left in the table, so a row has 8 attributes and a 24-byte header. The variables a run's
 * `core.setVariable` nodes wrote are still folded by their type from the definition. A completed run's
 * own row and node rows are pinned in bytes as stored (with the run's numbered references, migration
 * 1765430030000). The migration keeps every row, and its `down` gives each row its type back from its
 * run's definition.
 */
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { RunNodeLean1765430020000 } from '../../migrations/1765430020000-run-node-lean';
import { runMigrations } from '../../src/platform/database/migration-runner';
import { migrateUpTo, runOneMigration, useScratchDataSource } from '../support/scratch-db';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain, waitForStatus } from './run-kit';

const LEAN = ['run_id', 'node_id', 'status', 'attempt', 'outputs', 'error', 'gate_id', 'updated_at'];
const columns = async (ds: DataSource) =>
  ((await ds.query(`SELECT "column_name" FROM information_schema.columns WHERE "table_name" = 'run_node' ORDER BY "ordinal_position"`)) as Array<{ column_name: string }>).map((c) => c.column_name);
/** The table's attributes, dropped ones included: more than 8 give a row with a null a 32-byte header. */
const attributes = async (ds: DataSource) => Number(((await ds.query(`SELECT "relnatts" FROM pg_class WHERE "oid" = 'run_node'::regclass`)) as Array<{ relnatts: number }>)[0].relnatts);

const CHAIN = {
  nodes: [
    { id: 'set', typeId: 'core.setVariable', config: { variables: { colour: 'green' } } },
    { id: 'noop', typeId: 'core.noop', config: {} },
  ],
  edges: [{ from: 'set', to: 'noop' }],
};

const THREE = noopChain(3);

describe('runs: lean node rows', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp();
    key = await t.key({ tenant: 'acme', scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'acme', 'vendor.test.leannodes', { 'vendor.test.leannodes.vars': CHAIN, 'vendor.test.leannodes.three': THREE });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a completed run writes 8-attribute node rows without a type, and its variables still come from its setVariable node', async () => {
    expect(await columns(t.ds)).toEqual(LEAN);
    expect(await attributes(t.ds)).toBe(8);
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.leannodes.vars' } });
    expect(r.status).toBe(201);
    const runId = r.body.runId as string;
    await waitForStatus(t, key, runId, ['completed']);
    const rows = (await t.ds.query(`SELECT "node_id", "status", pg_typeof("status")::text AS "type" FROM "run_node" WHERE "run_id" = $1 ORDER BY "node_id"`, [runId])) as unknown[];
    expect(rows).toEqual([
      { node_id: 'noop', status: 'completed', type: 'run_node_status' },
      { node_id: 'set', status: 'completed', type: 'run_node_status' },
    ]);
    const snap = await t.http('GET', `/v1/runs/${runId}`, { token: key });
    expect(snap.status).toBe(200);
    expect(snap.body.variables).toEqual({ colour: 'green', inputs: {} });
  });

  it("a completed 3-node run's own row and node rows take at most 520 bytes of rows", async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.leannodes.three' } });
    expect(r.status).toBe(201);
    const runId = r.body.runId as string;
    await waitForStatus(t, key, runId, ['completed']);
    // pg_column_size: a row's header and columns (not its page's line pointer and free space), which do not move with how runs were written.
    const [{ run }] = (await t.ds.query(`SELECT pg_column_size(r.*) AS "run" FROM "run" r WHERE r."id" = $1`, [runId])) as Array<{ run: number }>;
    const nodes = (await t.ds.query(`SELECT pg_column_size(n.*) AS "bytes" FROM "run_node" n WHERE n."run_id" = $1`, [runId])) as Array<{ bytes: number }>;
    expect(nodes).toHaveLength(3);
    const total = Number(run) + nodes.reduce((n, x) => n + Number(x.bytes), 0);
    // 504 here (the run row 240, each node row 88). Before migrations 1765430020000 and 1765430030000 the same run took 619
    // (283 and 3 × 112): the two 33-byte hashes, the node's type and status as text, a node row's 32-byte header.
    expect(nodes.every((x) => Number(x.bytes) <= 88)).toBe(true);
    expect(total).toBeLessThanOrEqual(520);
  });
});

describe('the lean node rows migration', () => {
  const scratch = useScratchDataSource();

  it('rebuilds the table with every row, and down gives each row its type back from its run\'s definition', async () => {
    const ds = scratch.ds;
    const name = new RunNodeLean1765430020000().name;
    const i = await migrateUpTo(ds, name);
    expect(await attributes(ds)).toBe(10);
    const definition = JSON.stringify({ nodes: [{ id: 'a', typeId: 'core.noop' }, { id: 'b', typeId: 'core.approval' }], edges: [{ from: 'a', to: 'b' }] });
    const [{ id }] = (await ds.query(
      `INSERT INTO "run" ("tenant", "kind", "status", "metadata", "definition_hash") VALUES ('acme', 'workflow', 'waiting-approval', '{}', run_definition_ref('acme', $1::jsonb)) RETURNING "id"`,
      [definition],
    )) as Array<{ id: string }>;
    await ds.query(`INSERT INTO "run_node" ("run_id", "node_id", "type_id", "status", "attempt", "outputs") VALUES ($1, 'a', 'core.noop', 'completed', 2, '{"x":1}')`, [id]);
    await ds.query(`INSERT INTO "run_node" ("run_id", "node_id", "type_id", "status", "gate_id") VALUES ($1, 'b', 'core.approval', 'waiting', gen_random_uuid())`, [id]);
    const read = async () => (await ds.query(`SELECT "run_id", "node_id", "status"::text AS "status", "attempt", "outputs", "error", "gate_id", "updated_at" FROM "run_node" ORDER BY "node_id"`)) as unknown[];
    const before = await read();

    expect(await runMigrations(ds, MIGRATIONS.slice(i, i + 1))).toEqual([name]);
    expect(await columns(ds)).toEqual(LEAN);
    expect(await attributes(ds)).toBe(8);
    expect(await read()).toEqual(before);
    await expect(ds.query(`INSERT INTO "run_node" ("run_id", "node_id", "status") VALUES ($1, 'c', 'finished')`, [id])).rejects.toThrow(/run_node_status/);
    await expect(ds.query(`INSERT INTO "run_node" ("run_id", "node_id", "status") VALUES ($1, 'a', 'completed')`, [id])).rejects.toThrow(/PK_run_node/);

    await runOneMigration(ds, new RunNodeLean1765430020000(), 'down');
    expect(await read()).toEqual(before);
    expect(await ds.query(`SELECT "node_id", "type_id" FROM "run_node" ORDER BY "node_id"`)).toEqual([
      { node_id: 'a', type_id: 'core.noop' },
      { node_id: 'b', type_id: 'core.approval' },
    ]);
  });
});
