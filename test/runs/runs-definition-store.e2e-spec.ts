/**
 * A run refers to its workflow definition instead of carrying a copy (migration 1765300000000): the
 * definitions are stored once per tenant and content (`run_definition`, keyed by tenant and SHA-256),
 * every run of one definition shares its row, and a run only ever reads its own tenant's definitions.
 * Who started it (its owner's v2 subject and its starter's scopes) is stored the same way
 * (`run_principal`, migration 1765300010000). A run names each row by its number (`definition_key`,
 * `principal_key`, migration 1765430030000); the row's hash stays its identity within its tenant.
 */
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { RunReferenceKeys1765430030000 } from '../../migrations/1765430030000-run-reference-keys';
import { runMigrations } from '../../src/platform/database/migration-runner';
import { RunEngineService } from '../../src/capabilities/runs/engine/run-engine.service';
import { createScratchDatabase, migrateUpTo, runOneMigration, useScratchDataSource } from '../support/scratch-db';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, waitForStatus } from './run-kit';

const SHARED = {
  nodes: [
    { id: 'first', typeId: 'core.noop', config: { step: 1 } },
    { id: 'wait', typeId: 'core.delay', config: { ms: 1 } },
  ],
  edges: [{ from: 'first', to: 'wait' }],
};
/** Installed for acme only: its config is what another tenant must never read. */
const PRIVATE = { nodes: [{ id: 'only', typeId: 'core.noop', config: { secret: 'acme-only' } }], edges: [] };

describe('runs: stored definitions', () => {
  let t: TestApp;
  let acme: string;
  let globex: string;

  /** The run's definition key, and the hash and tenant of the row it names. */
  const refOf = async (runId: string): Promise<{ k: string; h: string; tenant: string }> =>
    ((await t.ds.query(`SELECT r."definition_key" AS "k", encode(d."hash", 'hex') AS "h", d."tenant" FROM "run" r JOIN "run_definition" d ON d."key" = r."definition_key" WHERE r."id" = $1`, [runId])) as Array<{
      k: string;
      h: string;
      tenant: string;
    }>)[0];
  const stored = async (): Promise<Array<{ tenant: string; h: string }>> =>
    (await t.ds.query(`SELECT "tenant", encode("hash", 'hex') AS "h" FROM "run_definition" ORDER BY 1, 2`)) as Array<{ tenant: string; h: string }>;
  const create = async (token: string, workflowId: string): Promise<string> => {
    const r = await t.http('POST', '/v1/runs', { token, body: { workflowId } });
    expect(r.status).toBe(201);
    return r.body.runId as string;
  };

  beforeAll(async () => {
    t = await createTestApp();
    acme = await t.key({ tenant: 'acme', scopes: ['runs:create', 'runs:read'] });
    globex = await t.key({ tenant: 'globex', scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'acme', 'vendor.test.store', { 'vendor.test.shared': SHARED, 'vendor.test.private': PRIVATE });
    await installChains(t, 'globex', 'vendor.test.store', { 'vendor.test.shared': SHARED });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('two runs of one definition share one stored row (and a fork of them too); the same chain in another tenant is a row of its own', async () => {
    const a1 = await create(acme, 'vendor.test.shared');
    const a2 = await create(acme, 'vendor.test.shared');
    const g1 = await create(globex, 'vendor.test.shared');
    for (const [token, id] of [[acme, a1], [acme, a2], [globex, g1]]) await waitForStatus(t, token, id, ['completed']);
    const a = await refOf(a1);
    expect(a).toEqual({ k: expect.stringMatching(/^\d+$/), h: expect.stringMatching(/^[0-9a-f]{64}$/), tenant: 'acme' });
    const h = a.h;
    expect(await refOf(a2)).toEqual(a);
    const g = await refOf(g1);
    expect(g).toEqual({ k: expect.any(String), h, tenant: 'globex' });
    expect(g.k).not.toBe(a.k);
    expect((await stored()).filter((s) => s.h === h)).toEqual([{ tenant: 'acme', h }, { tenant: 'globex', h }]);
    // No run row carries the definition itself any more.
    const columns = (await t.ds.query(`SELECT "column_name" FROM information_schema.columns WHERE "table_name" = 'run' AND "column_name" LIKE 'definition%'`)) as Array<{ column_name: string }>;
    expect(columns.map((c) => c.column_name)).toEqual(['definition_key']);
    // Each run still answers the chain it executed, through its reference.
    for (const [token, id] of [[acme, a2], [globex, g1]]) {
      const d = await t.http('GET', `/v1/runs/${id}/definition`, { token });
      expect(d.status).toBe(200);
      expect(d.body.nodes).toEqual([
        { id: 'first', typeId: 'core.noop', config: { step: 1 } },
        { id: 'wait', typeId: 'core.delay', config: { ms: 1 } },
      ]);
    }
    const fork = await t.http('POST', `/v1/runs/${a1}:fork`, { token: await t.key({ tenant: 'acme', scopes: ['runs:create', 'runs:read', 'runs:replay'] }), body: { mode: 'replay' } });
    expect(fork.status).toBe(201);
    await waitForStatus(t, acme, fork.body.runId, ['completed']);
    expect(await refOf(fork.body.runId)).toEqual(a);
    expect((await stored()).filter((s) => s.h === h)).toHaveLength(2);
  });

  it("a run of another tenant naming a tenant's definition reads nothing of it: the key is the run's own tenant", async () => {
    const mine = await create(acme, 'vendor.test.private');
    await waitForStatus(t, acme, mine, ['completed']);
    const { k, h } = await refOf(mine);
    expect((await stored()).filter((s) => s.h === h)).toEqual([{ tenant: 'acme', h }]);
    // A globex run row that names acme's definition by its key (no writer of the host can make one).
    const [{ id }] = (await t.ds.query(
      `INSERT INTO "run" ("tenant", "principal", "kind", "status", "metadata", "workflow_id", "definition_key", "inputs", "configurable")
       VALUES ('globex', 'tester', 'workflow', 'pending', '{}'::jsonb, 'vendor.test.private', $1::bigint, '{}'::jsonb, '{}'::jsonb) RETURNING "id"`,
      [k],
    )) as Array<{ id: string }>;
    const d = await t.http('GET', `/v1/runs/${id}/definition`, { token: globex });
    expect(d.status).toBe(200);
    expect(d.body).toEqual({ runId: id, workflowId: 'vendor.test.private', nodes: [], edges: [] });
    expect(JSON.stringify(d.body)).not.toContain('acme-only');
    // The engine claims it with no definition: the run fails; nothing of acme's chain executes.
    t.app.get(RunEngineService).kick(id);
    const failed = await waitForStatus(t, globex, id, ['failed', 'completed']);
    expect([failed.status, failed.error?.code]).toEqual(['failed', 'engine_error']);
    expect(JSON.stringify(failed)).not.toContain('acme-only');
    // And acme's run is still 404 to globex, its definition included.
    expect((await t.http('GET', `/v1/runs/${mine}/definition`, { token: globex })).status).toBe(404);
  });
});

describe('runs: stored principals', () => {
  let t: TestApp;

  const principalOf = async (runId: string) =>
    ((await t.ds.query(
      `SELECT r."principal_key" AS "k", encode(p."hash", 'hex') AS "h", r."metadata", p."subject", p."scopes" FROM "run" r LEFT JOIN "run_principal" p ON p."tenant" = r."tenant" AND p."key" = r."principal_key" WHERE r."id" = $1`,
      [runId],
    )) as Array<{ k: string | null; h: string | null; metadata: Record<string, unknown>; subject: Record<string, unknown> | null; scopes: string[] | null }>)[0];

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_PROTOCOL_MAJORS: '1,2' } });
    await installChains(t, 'acme', 'vendor.test.store', { 'vendor.test.shared': SHARED });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('the runs one credential starts share one stored subject and scope set; a fork keeps the subject with scopes of its own', async () => {
    const runner = await t.key({ tenant: 'acme', principal: 'runner', scopes: ['runs:create', 'runs:read', 'tools:read'] });
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await t.http('POST', '/v1/runs', { token: runner, body: { workflowId: 'vendor.test.shared', tags: ['t'] } });
      expect(r.status).toBe(201);
      ids.push(r.body.runId as string);
      await waitForStatus(t, runner, r.body.runId as string, ['completed']);
    }
    const [a, b] = [await principalOf(ids[0]), await principalOf(ids[1])];
    const subject = { kind: 'workload', lane: 'api-key', issuer: 'urn:openwop-host:api-keys', tenant: 'acme', subjectId: 'runner' };
    expect(a).toEqual({ k: expect.stringMatching(/^\d+$/), h: expect.stringMatching(/^[0-9a-f]{64}$/), metadata: { tags: ['t'] }, subject, scopes: ['runs:create', 'runs:read', 'tools:read'] });
    expect([b.k, b.h]).toEqual([a.k, a.h]);
    expect(((await t.ds.query(`SELECT count(*)::int AS "n" FROM "run_principal" WHERE "hash" = decode($1, 'hex')`, [a.h])) as Array<{ n: number }>)[0].n).toBe(1);
    // The v2 owner still renders the subject recorded at creation, in its stored key order.
    const v2 = await t.http('GET', `/runs/acme~2F${ids[0]}`, { token: runner, headers: { 'openwop-version': '2.0' } });
    expect(v2.status).toBe(200);
    expect(JSON.stringify(v2.body.owner)).toBe(JSON.stringify({ tenant: 'acme', subject }));
    // A fork is the source owner's run: its subject, with the scopes both the source and the requester hold.
    const forker = await t.key({ tenant: 'acme', principal: 'forker', scopes: ['runs:create', 'runs:read'] });
    const fork = await t.http('POST', `/v1/runs/${ids[0]}:fork`, { token: forker, body: { mode: 'replay' } });
    expect(fork.status).toBe(201);
    await waitForStatus(t, forker, fork.body.runId as string, ['completed']);
    const f = await principalOf(fork.body.runId as string);
    expect(f).toMatchObject({ subject, scopes: ['runs:create', 'runs:read'] });
    expect([f.k === a.k, f.h === a.h]).toEqual([false, false]);
    expect(f.metadata.subject).toBeUndefined();
  });
});

describe('the run-principals migration', () => {
  it("moves each run's subject and scopes into one row per tenant and content, and gives them back when reverted", async () => {
    const db = await createScratchDatabase();
    const ds = new DataSource({ type: 'postgres', url: db.url, installExtensions: false });
    await ds.initialize();
    try {
      const i = await migrateUpTo(ds, 'RunPrincipals1765300010000');
      const subject = { kind: 'workload', lane: 'api-key', issuer: 'urn:openwop-host:api-keys', tenant: 'acme', subjectId: 'runner' };
      const insert = async (tenant: string, metadata: unknown, scopes: string[] | null): Promise<string> =>
        ((await ds.query(`INSERT INTO "run" ("tenant", "kind", "status", "metadata", "scopes") VALUES ($1, 'workflow', 'completed', $2::jsonb, $3::text[]) RETURNING "id"`, [
          tenant,
          JSON.stringify(metadata),
          scopes,
        ])) as Array<{ id: string }>)[0].id;
      const a1 = await insert('acme', { subject, tags: ['x'] }, ['runs:read']);
      const a2 = await insert('acme', { subject }, ['runs:read']);
      const legacy = await insert('acme', {}, ['runs:read']);
      const tool = await insert('acme', { tool: 'x' }, null);
      await runMigrations(ds, MIGRATIONS.slice(0, i + 1));
      const rows = (await ds.query(
        `SELECT r."id", encode(r."principal_hash", 'hex') AS "h", r."metadata", p."subject", p."scopes" FROM "run" r LEFT JOIN "run_principal" p ON p."tenant" = r."tenant" AND p."hash" = r."principal_hash"`,
      )) as Array<{ id: string; h: string | null; metadata: unknown; subject: unknown; scopes: string[] | null }>;
      const byId = new Map(rows.map((r) => [r.id, r]));
      expect(byId.get(a1)).toMatchObject({ metadata: { tags: ['x'] }, subject, scopes: ['runs:read'] });
      expect(byId.get(a2)).toMatchObject({ h: byId.get(a1)!.h, metadata: {} });
      expect(byId.get(legacy)).toMatchObject({ metadata: {}, subject: null, scopes: ['runs:read'] });
      expect(byId.get(tool)).toMatchObject({ h: null, metadata: { tool: 'x' }, subject: null, scopes: null });
      expect(((await ds.query(`SELECT count(*)::int AS "n" FROM "run_principal"`)) as Array<{ n: number }>)[0].n).toBe(2);
      const q = ds.createQueryRunner();
      try {
        await new MIGRATIONS[i]().down(q);
      } finally {
        await q.release();
      }
      const back = (await ds.query(`SELECT "id", "metadata", "scopes" FROM "run"`)) as Array<{ id: string; metadata: unknown; scopes: string[] | null }>;
      expect(new Map(back.map((r) => [r.id, [r.metadata, r.scopes]]))).toEqual(
        new Map<string, unknown>([
          [a1, [{ subject, tags: ['x'] }, ['runs:read']]],
          [a2, [{ subject }, ['runs:read']]],
          [legacy, [{}, ['runs:read']]],
          [tool, [{ tool: 'x' }, null]],
        ]),
      );
    } finally {
      await ds.destroy();
      await db.drop();
    }
  });
});

describe('the run-definitions migration', () => {
  it('moves every run\'s definition into one row per tenant and content, and gives the copies back when reverted', async () => {
    const db = await createScratchDatabase();
    const ds = new DataSource({ type: 'postgres', url: db.url, installExtensions: false });
    await ds.initialize();
    try {
      const i = await migrateUpTo(ds, 'RunDefinitions1765300000000');
      const insert = async (tenant: string, definition: unknown): Promise<string> =>
        ((await ds.query(`INSERT INTO "run" ("tenant", "kind", "status", "metadata", "workflow_id", "definition") VALUES ($1, 'workflow', 'completed', '{}', 'w', $2::jsonb) RETURNING "id"`, [
          tenant,
          definition === null ? null : JSON.stringify(definition),
        ])) as Array<{ id: string }>)[0].id;
      const a1 = await insert('acme', SHARED);
      // The same definition written with its keys in another order is the same jsonb: the same row.
      const a2 = await insert('acme', { edges: SHARED.edges, nodes: SHARED.nodes });
      const a3 = await insert('acme', PRIVATE);
      const g1 = await insert('globex', SHARED);
      const none = await insert('acme', null);
      await runMigrations(ds, MIGRATIONS.slice(0, i + 1));
      const rows = (await ds.query(
        `SELECT r."id", r."tenant", encode(r."definition_hash", 'hex') AS "h", d."definition" FROM "run" r LEFT JOIN "run_definition" d ON d."tenant" = r."tenant" AND d."hash" = r."definition_hash"`,
      )) as Array<{ id: string; tenant: string; h: string | null; definition: unknown }>;
      const byId = new Map(rows.map((r) => [r.id, r]));
      expect(byId.get(a1)!.definition).toEqual(SHARED);
      expect(byId.get(a2)!.h).toBe(byId.get(a1)!.h);
      expect(byId.get(g1)!.h).toBe(byId.get(a1)!.h);
      expect(byId.get(a3)!.definition).toEqual(PRIVATE);
      expect(byId.get(none)!).toMatchObject({ h: null, definition: null });
      expect(((await ds.query(`SELECT "tenant", count(*)::int AS "n" FROM "run_definition" GROUP BY 1 ORDER BY 1`)) as unknown[])).toEqual([{ tenant: 'acme', n: 2 }, { tenant: 'globex', n: 1 }]);
      const q = ds.createQueryRunner();
      try {
        await new MIGRATIONS[i]().down(q);
      } finally {
        await q.release();
      }
      const back = (await ds.query(`SELECT "id", "definition" FROM "run"`)) as Array<{ id: string; definition: unknown }>;
      expect(new Map(back.map((r) => [r.id, r.definition]))).toEqual(new Map<string, unknown>([[a1, SHARED], [a2, SHARED], [a3, PRIVATE], [g1, SHARED], [none, null]]));
    } finally {
      await ds.destroy();
      await db.drop();
    }
  });
});

describe('the run reference keys migration', () => {
  const scratch = useScratchDataSource();

  it("gives every stored definition and principal a number, every run the numbers of its rows, and the hashes back when reverted", async () => {
    const ds = scratch.ds;
    const name = new RunReferenceKeys1765430030000().name;
    const i = await migrateUpTo(ds, name);
    const insert = async (tenant: string, definition: unknown, scopes: string[] | null): Promise<string> =>
      ((await ds.query(
        `INSERT INTO "run" ("tenant", "kind", "status", "metadata", "workflow_id", "definition_hash", "principal_hash")
         VALUES ($1, 'workflow', 'completed', '{}', 'w', run_definition_ref($1, $2::jsonb), run_principal_ref($1, NULL, $3::text[])) RETURNING "id"`,
        [tenant, definition === null ? null : JSON.stringify(definition), scopes],
      )) as Array<{ id: string }>)[0].id;
    const a1 = await insert('acme', SHARED, ['runs:read']);
    const a2 = await insert('acme', SHARED, ['runs:read']);
    const a3 = await insert('acme', PRIVATE, null);
    const g1 = await insert('globex', SHARED, ['runs:read']);
    const none = await insert('acme', null, null);
    const hashes = async () =>
      new Map(
        ((await ds.query(`SELECT "id", encode("definition_hash", 'hex') AS "d", encode("principal_hash", 'hex') AS "p" FROM "run"`)) as Array<{ id: string; d: string | null; p: string | null }>).map((r) => [r.id, [r.d, r.p]]),
      );
    const before = await hashes();

    expect(await runMigrations(ds, MIGRATIONS.slice(i, i + 1))).toEqual([name]);
    const rows = (await ds.query(
      `SELECT r."id", r."definition_key" AS "dk", r."principal_key" AS "pk", d."definition", p."scopes", encode(d."hash", 'hex') AS "dh", encode(p."hash", 'hex') AS "ph"
       FROM "run" r LEFT JOIN "run_definition" d ON d."tenant" = r."tenant" AND d."key" = r."definition_key" LEFT JOIN "run_principal" p ON p."tenant" = r."tenant" AND p."key" = r."principal_key"`,
    )) as Array<{ id: string; dk: string | null; pk: string | null; definition: unknown; scopes: string[] | null; dh: string | null; ph: string | null }>;
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const [id, [d, p]] of before) expect([byId.get(id)!.dh, byId.get(id)!.ph]).toEqual([d, p]);
    expect(byId.get(a1)).toMatchObject({ definition: SHARED, scopes: ['runs:read'] });
    expect([byId.get(a2)!.dk, byId.get(a2)!.pk]).toEqual([byId.get(a1)!.dk, byId.get(a1)!.pk]);
    expect(byId.get(g1)!.dk).not.toBe(byId.get(a1)!.dk);
    expect(byId.get(a3)).toMatchObject({ definition: PRIVATE, pk: null });
    expect(byId.get(none)).toMatchObject({ dk: null, pk: null });
    const cols = (await ds.query(`SELECT "column_name" FROM information_schema.columns WHERE "table_name" = 'run' AND ("column_name" LIKE '%\\_key' OR "column_name" LIKE '%\\_hash') ORDER BY 1`)) as Array<{ column_name: string }>;
    expect(cols.map((c) => c.column_name)).toEqual(['definition_key', 'idempotency_key', 'principal_key', 'request_hash', 'workspace_key']);
    // The functions answer the key of a row already stored, and store a new one under the next key.
    const [{ k }] = (await ds.query(`SELECT run_definition_ref('acme', $1::jsonb) AS "k"`, [JSON.stringify(SHARED)])) as Array<{ k: string }>;
    expect(k).toBe(byId.get(a1)!.dk);
    const [{ n }] = (await ds.query(`SELECT run_definition_ref('acme', '{"nodes":[],"edges":[]}'::jsonb) AS "n"`)) as Array<{ n: string }>;
    expect(Number(n)).toBeGreaterThan(Math.max(...rows.map((r) => Number(r.dk ?? 0))));
    const [{ p }] = (await ds.query(`SELECT run_principal_ref('globex', NULL, '{runs:read}'::text[]) AS "p"`)) as Array<{ p: string }>;
    expect(p).toBe(byId.get(g1)!.pk);

    await runOneMigration(ds, new RunReferenceKeys1765430030000(), 'down');
    expect(await hashes()).toEqual(before);
    const [{ h }] = (await ds.query(`SELECT encode(run_definition_ref('acme', $1::jsonb), 'hex') AS "h"`, [JSON.stringify(SHARED)])) as Array<{ h: string }>;
    expect(h).toBe(before.get(a1)![0]);
  });
});
