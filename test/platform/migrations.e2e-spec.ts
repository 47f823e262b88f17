import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { ENTITIES } from '../../src/entities';
import { migrationStatus, pendingMigrations, runMigrations } from '../../src/platform/database/migration-runner';
import { createScratchDatabase, migrateUpTo } from '../support/scratch-db';

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

describe('the approval-subject migration', () => {
  it('names the run, node, workflow and title of gates opened before it', async () => {
    const db = await createScratchDatabase();
    const ds = new DataSource({ type: 'postgres', url: db.url, installExtensions: false });
    await ds.initialize();
    try {
      const i = await migrateUpTo(ds, 'ApprovalSubjectFacts1764880000000');
      const [{ id: runId }] = (await ds.query(
        `INSERT INTO "run" ("tenant", "kind", "status", "metadata", "workflow_id") VALUES ('acme', 'workflow', 'waiting-approval', '{}', 'vendor.acme.ship') RETURNING "id"`,
      )) as Array<{ id: string }>;
      const gate = async (kind: string, subject: string, ref: string) =>
        ((await ds.query(
          `INSERT INTO "approval" ("tenant", "subject_kind", "subject_id", "required_scope", "quorum", "artifact_ref", "requested_by", "expires_at")
           VALUES ('acme', $1, $2, 'approvals:respond', 1, $3, 'alice', now() + interval '1 hour') RETURNING "id"`,
          [kind, subject, ref],
        )) as Array<{ id: string }>)[0].id;
      const step = await gate('run-node', runId, `run:${runId}#review`);
      const proposal = await gate('proposal', '00000000-0000-4000-8000-000000000001', 'sha256:00');
      const untitled = await gate('run-node', runId, `run:${runId}#other`);
      await ds.query(
        `INSERT INTO "event" ("tenant", "stream_id", "sequence", "type", "payload") VALUES ('acme', 'host', 1, 'interrupt.requested', $1), ('acme', 'host', 2, 'interrupt.requested', $2)`,
        [JSON.stringify({ kind: 'approval', data: { gateId: step, title: 'Ship it?' } }), JSON.stringify({ kind: 'approval', data: { gateId: proposal, title: 'A better greeting' } })],
      );
      await runMigrations(ds, MIGRATIONS);
      const rows = (await ds.query(`SELECT "id", "title", "run_id", "node_id", "workflow_id" FROM "approval"`)) as Array<Record<string, string | null>>;
      const byId = new Map(rows.map((r) => [r.id, r]));
      expect(byId.get(step)).toEqual({ id: step, title: 'Ship it?', run_id: runId, node_id: 'review', workflow_id: 'vendor.acme.ship' });
      expect(byId.get(proposal)).toEqual({ id: proposal, title: 'A better greeting', run_id: null, node_id: null, workflow_id: null });
      expect(byId.get(untitled)).toEqual({ id: untitled, title: null, run_id: runId, node_id: 'other', workflow_id: 'vendor.acme.ship' });
    } finally {
      await ds.destroy();
      await db.drop();
    }
  });
});
