/**
 * Run ids in creation order (migration 1765410000000): a run created through the API and a row inserted
 * without an id (the column's default, `run_new_id()`) both get a UUID version 7 whose first 48 bits
 * are the creation time, so later runs' ids sort after earlier ones' and their index entries land at
 * the end of the run's keys; reverting the migration gives the column its random default back.
 */
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { runMigrations } from '../../src/platform/database/migration-runner';
import { UUID } from '../../src/platform/ids';
import { createScratchDatabase } from '../support/scratch-db';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain, waitForStatus } from './run-kit';

/** The milliseconds a version 7 UUID carries. */
const millisOf = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

describe('runs: time-ordered ids', () => {
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    t = await createTestApp();
    token = await t.key({ tenant: 'acme', scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'acme', 'vendor.test.ids', { 'vendor.test.ids': noopChain(1) });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('a run created through the API has a version 7 id of its creation time, after the ids of earlier runs', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const before = Date.now();
      const r = await t.http('POST', '/v1/runs', { token, body: { workflowId: 'vendor.test.ids' } });
      expect(r.status).toBe(201);
      const id = r.body.runId as string;
      expect(id).toMatch(UUID);
      expect(id[14]).toBe('7');
      expect(millisOf(id)).toBeGreaterThanOrEqual(before);
      expect(millisOf(id)).toBeLessThanOrEqual(Date.now());
      ids.push(id);
      await new Promise((res) => setTimeout(res, 2));
    }
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) await waitForStatus(t, token, id, ['completed']);
  });

  it('a row inserted without an id gets one from the database clock, in the same order', async () => {
    const rows = (await t.ds.query(
      `INSERT INTO "run" ("tenant", "kind", "status", "metadata") SELECT 'acme', 'tool', 'completed', '{}' FROM generate_series(1, 3) RETURNING "id", floor(extract(epoch FROM clock_timestamp()) * 1000)::float8 AS "now"`,
    )) as Array<{ id: string; now: number }>;
    for (const r of rows) {
      expect(r.id).toMatch(UUID);
      expect(r.id[14]).toBe('7');
      expect('89ab').toContain(r.id[19]);
      expect(Math.abs(millisOf(r.id) - r.now)).toBeLessThan(1000);
    }
    expect(new Set(rows.map((r) => r.id)).size).toBe(3);
  });
});

describe('the time-ordered run ids migration', () => {
  it('sets the id default and gives the random default back when reverted', async () => {
    const db = await createScratchDatabase();
    const ds = new DataSource({ type: 'postgres', url: db.url, installExtensions: false });
    await ds.initialize();
    try {
      const i = MIGRATIONS.findIndex((m) => (new m().name ?? m.name) === 'RunTimeOrderedIds1765410000000');
      expect(i).toBeGreaterThan(0);
      await runMigrations(ds, MIGRATIONS.slice(0, i + 1));
      const insert = async () => ((await ds.query(`INSERT INTO "run" ("tenant", "kind", "status", "metadata") VALUES ('acme', 'tool', 'completed', '{}') RETURNING "id"`)) as Array<{ id: string }>)[0].id;
      expect((await insert())[14]).toBe('7');
      const q = ds.createQueryRunner();
      try {
        await new MIGRATIONS[i]().down(q);
      } finally {
        await q.release();
      }
      expect((await insert())[14]).toBe('4');
      expect(await ds.query(`SELECT 1 FROM pg_proc WHERE proname = 'run_new_id'`)).toEqual([]);
    } finally {
      await ds.destroy();
      await db.drop();
    }
  });
});
