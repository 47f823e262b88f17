/**
 * The event tenant migration (1765400010000) on a populated database: an event keeps its tenant only
 * when it is a tool call, every other column is kept; the tool-call index is still there; the
 * webhook outbox trigger enqueues with the stream's tenant. Its `down` gives every event its
 * stream's tenant again.
 */
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { EventTenantOnToolCalls1765400010000 } from '../../migrations/1765400010000-event-tenant-on-tool-calls';
import { runMigrations } from '../../src/platform/database/migration-runner';
import { migrateUpTo, runOneMigration, useScratchDataSource } from '../support/scratch-db';

const NAME = 'EventTenantOnToolCalls1765400010000';
const read = async (ds: DataSource) =>
  (await ds.query(
    `SELECT e."stream_key", e."sequence", e."created_at"::text AS "created_at", e."id", e."code", e."tenant", e."workspace", e."type", e."payload"::text AS "payload", e."correlation_id", e."causation_id", e."node_id"
     FROM "event" e ORDER BY e."stream_key", e."sequence"`,
  )) as Array<Record<string, string | number | null>>;

const migrate = (ds: DataSource, how: 'up' | 'down') => runOneMigration(ds, new EventTenantOnToolCalls1765400010000(), how);

describe('the event tenant migration', () => {
  const scratch = useScratchDataSource();
  let ds: DataSource;

  beforeAll(() => {
    ds = scratch.ds;
  });

  it('keeps the tenant of tool calls only, and down gives every event its tenant back', async () => {
    const i = await migrateUpTo(ds, NAME);
    const run = randomUUID();
    const [{ key }] = (await ds.query(`INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") VALUES ('acme', $1, 3) RETURNING "key"`, [run])) as Array<{ key: string }>;
    const [{ key: host }] = (await ds.query(`INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") VALUES ('globex', 'host', 1) RETURNING "key"`)) as Array<{ key: string }>;
    await ds.query(
      `INSERT INTO "event" ("stream_key", "sequence", "id", "code", "tenant", "workspace", "type", "payload", "correlation_id", "causation_id", "node_id")
       VALUES ($1, 1, gen_random_uuid(), 1, 'acme', 'ws-1', NULL, '{"workflowId":"w"}', NULL, NULL, NULL),
              ($1, 2, gen_random_uuid(), 0, 'acme', 'ws-1', 'agent.toolCalled', '{"toolId":"t"}', 'c-1', NULL, 'n1'),
              ($1, 3, gen_random_uuid(), 7 + 1024, 'acme', 'ws-1', NULL, '{"typeId":"core.noop"}', NULL, NULL, 'n1'),
              ($2, 1, gen_random_uuid(), 0, 'globex', NULL, 'goal.created', '{"goalId":"g1"}', NULL, NULL, NULL)`,
      [key, host],
    );
    const before = await read(ds);

    expect(await runMigrations(ds, MIGRATIONS.slice(i, i + 1))).toEqual([NAME]);
    const after = await read(ds);
    expect(after.map((r) => r.tenant)).toEqual([null, 'acme', null, null]);
    expect(after.map(({ tenant: _t, ...r }) => r)).toEqual(before.map(({ tenant: _t, ...r }) => r));
    const indexes = ((await ds.query(`SELECT "indexname" FROM pg_indexes WHERE "tablename" = 'event' ORDER BY 1`)) as Array<{ indexname: string }>).map((r) => r.indexname);
    expect(indexes).toEqual(['event_stream_seq_uq', 'event_tool_call_idx']);

    // The webhook outbox enqueues a run's event (no tenant on the row) for the stream's tenant's subscription.
    await ds.query(`INSERT INTO "webhook_subscription" ("id", "tenant", "principal", "url", "events", "secret_ref", "secret_fingerprint") VALUES ('wh-1', 'acme', 'p', 'https://example.com/h', '{run.completed}', gen_random_uuid(), 'fp')`);
    await ds.query(`INSERT INTO "event" ("stream_key", "sequence", "code", "workspace", "payload") VALUES ($1, 4, 2, 'ws-1', '{}')`, [key]);
    expect(await ds.query(`SELECT "tenant", "workspace", "run_id", "sequence", "event_type" FROM "webhook_delivery"`)).toEqual([{ tenant: 'acme', workspace: 'ws-1', run_id: run, sequence: '4', event_type: 'run.completed' }]);
    await ds.query(`DELETE FROM "webhook_delivery"`);
    await ds.query(`DELETE FROM "event" WHERE "stream_key" = $1 AND "sequence" = 4`, [key]);

    await migrate(ds, 'down');
    expect(await read(ds)).toEqual(before);
    await migrate(ds, 'up');
    expect((await read(ds)).map((r) => r.tenant)).toEqual([null, 'acme', null, null]);
  });
});
