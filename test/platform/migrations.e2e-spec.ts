import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { ENTITIES } from '../../src/entities';
import { migrationStatus, pendingMigrations, runMigrations } from '../../src/platform/database/migration-runner';
import { createScratchDatabase } from '../support/scratch-db';

describe('migrations', () => {
  let db: Awaited<ReturnType<typeof createScratchDatabase>>;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createScratchDatabase();
    ds = new DataSource({ type: 'postgres', url: db.url, entities: ENTITIES, installExtensions: false, uuidExtension: 'pgcrypto' });
    await ds.initialize();
  });
  afterAll(async () => {
    await ds.destroy();
    await db.drop();
  });

  it('migrate a fresh database, and the entities then need nothing more (no drift)', async () => {
    expect(await pendingMigrations(ds, MIGRATIONS)).toHaveLength(MIGRATIONS.length);
    const applied = await runMigrations(ds, MIGRATIONS);
    expect(applied).toHaveLength(MIGRATIONS.length);
    const log = await ds.driver.createSchemaBuilder().log();
    expect(log.upQueries.map((q) => q.query)).toEqual([]);
  });

  it('are idempotent and safe when replicas start together', async () => {
    const again = await Promise.all([runMigrations(ds, MIGRATIONS), runMigrations(ds, MIGRATIONS), runMigrations(ds, MIGRATIONS)]);
    expect(again).toEqual([[], [], []]);
    expect((await migrationStatus(ds, MIGRATIONS)).every((s) => s.applied)).toBe(true);
  });

  it('have unique names in a stable order', () => {
    const names = MIGRATIONS.map((m) => new m().name ?? m.name);
    expect(new Set(names).size).toBe(names.length);
    const stamps = names.map((n) => Number(/(\d{13})$/.exec(n ?? '')?.[1]));
    expect(stamps.every((s) => Number.isFinite(s))).toBe(true);
  });
});

describe('migrations racing on a fresh database', () => {
  it('apply each migration exactly once when two runners start together', async () => {
    const db = await createScratchDatabase();
    const a = new DataSource({ type: 'postgres', url: db.url, installExtensions: false });
    const b = new DataSource({ type: 'postgres', url: db.url, installExtensions: false });
    await Promise.all([a.initialize(), b.initialize()]);
    try {
      const [ra, rb] = await Promise.all([runMigrations(a, MIGRATIONS), runMigrations(b, MIGRATIONS)]);
      expect([...ra, ...rb].sort()).toEqual(MIGRATIONS.map((m) => new m().name ?? m.name).sort());
    } finally {
      await Promise.all([a.destroy(), b.destroy()]);
      await db.drop();
    }
  });
});
