/**
 * The event type codes migration (1765400000000) on a populated database: the run engine's event
 * types become codes (any other type keeps its text), a coded payload that starts with the event's
 * own nodeId is stored without it (and only then), every other column is kept; readers get every
 * event back as it was (event_type_name, and the payload with its nodeId first again); the webhook
 * outbox trigger still enqueues by type name. Its `down` gives the rows back as they were.
 */
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { EventTypeCodes1765400000000, MIGRATION_EVENT_TYPE_CODES } from '../../migrations/1765400000000-event-type-codes';
import { runMigrations } from '../../src/platform/database/migration-runner';
import { EVENT_TYPE_CODES, readForm } from '../../src/platform/events/event-codes';
import { migrateUpTo, runOneMigration, useScratchDataSource } from '../support/scratch-db';

const NAME = 'EventTypeCodes1765400000000';

const COLUMNS = `e."stream_key", e."sequence", e."created_at"::text AS "created_at", e."id", e."tenant", e."workspace", e."correlation_id", e."causation_id", e."node_id"`;
const readBefore = async (ds: DataSource) =>
  (await ds.query(`SELECT ${COLUMNS}, e."type", e."payload"::text AS "payload" FROM "event" e ORDER BY e."stream_key", e."sequence"`)) as Array<Record<string, string | null>>;
/** The rows as the host's readers give them back (readForm over code, type, payload and node_id). */
const readAfter = async (ds: DataSource) =>
  ((await ds.query(`SELECT ${COLUMNS}, e."code", e."type", e."payload"::text AS "payload" FROM "event" e ORDER BY e."stream_key", e."sequence"`)) as Array<Record<string, string | null> & { code: number }>).map(
    ({ code, type, payload, ...r }) => {
      const f = readForm(code, type, JSON.parse(payload!) as Record<string, unknown>, r.node_id);
      // A payload stored whole is read as its text; one left without its nodeId is rebuilt (as the host writes JSON).
      return { ...r, type: f.type, payload: code & 1024 ? JSON.stringify(f.payload) : payload };
    },
  );

const migrate = (ds: DataSource, how: 'up' | 'down') => runOneMigration(ds, new EventTypeCodes1765400000000(), how);

describe('the event type codes migration', () => {
  const scratch = useScratchDataSource();
  let ds: DataSource;

  beforeAll(() => {
    ds = scratch.ds;
  });

  it('defines the codes the host reads', () => {
    expect(EVENT_TYPE_CODES).toEqual(MIGRATION_EVENT_TYPE_CODES);
  });

  it('codes the engine types, leaves out leading node ids, keeps every event, and down gives them back', async () => {
    const i = await migrateUpTo(ds, NAME);
    const run = randomUUID();
    const [{ key }] = (await ds.query(`INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") VALUES ('acme', $1, 7) RETURNING "key"`, [run])) as Array<{ key: string }>;
    const [{ key: host }] = (await ds.query(`INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") VALUES ('acme', 'host', 1) RETURNING "key"`)) as Array<{ key: string }>;
    const rows: Array<[string, string, string | null]> = [
      ['run.started', '{"workflowId":"acme.ship","inputs":{"n":1.5,"list":[1,"two",null]}}', null],
      ['node.started', '{"nodeId":"n1","typeId":"core.noop","attempt":0}', 'n1'],
      // nodeId not first, another node's, spaced (not as the host writes it), alone: only the last is left out.
      ['node.completed', '{"z":1,"nodeId":"n1","outputs":{"text":"héllo \\"quoted\\""},"durationMs":3}', 'n1'],
      ['node.completed', '{"nodeId":"n2","outputs":{}}', 'n1'],
      ['node.failed', '{"nodeId": "n1", "error": {}}', 'n1'],
      ['node.suspended', '{"nodeId":"n\\"1"}', 'n"1'],
      ['vendor.custom', '{"nodeId":"n1","x":1}', 'n1'],
    ];
    for (const [k, [type, payload, node]] of rows.entries()) {
      await ds.query(
        `INSERT INTO "event" ("stream_key", "sequence", "id", "tenant", "workspace", "type", "payload", "correlation_id", "causation_id", "node_id", "created_at")
         VALUES ($1, $2, $3, 'acme', 'ws-1', $4, $5::json, $6, $7, $8, now() - interval '1 day')`,
        [key, k + 1, randomUUID(), type, payload, k ? 'corr-1' : null, k ? randomUUID() : null, node],
      );
    }
    await ds.query(`INSERT INTO "event" ("stream_key", "sequence", "tenant", "type", "payload") VALUES ($1, 1, 'acme', 'goal.created', '{"goalId":"g1"}')`, [host]);
    const before = await readBefore(ds);
    expect(before).toHaveLength(8);

    expect(await runMigrations(ds, MIGRATIONS.slice(i, i + 1))).toEqual([NAME]);
    expect(await readAfter(ds)).toEqual(before);
    const stored = (await ds.query(`SELECT "code", "type", "payload"::text AS "payload", "event_type_name"("code", "type") AS "name" FROM "event" ORDER BY "stream_key", "sequence"`)) as Array<{ code: number; type: string | null; payload: string; name: string }>;
    expect(stored.map((r) => [r.code, r.type, r.payload])).toEqual([
      [1, null, '{"workflowId":"acme.ship","inputs":{"n":1.5,"list":[1,"two",null]}}'],
      [7 + 1024, null, '{"typeId":"core.noop","attempt":0}'],
      [8, null, '{"z":1,"nodeId":"n1","outputs":{"text":"héllo \\"quoted\\""},"durationMs":3}'],
      [8, null, '{"nodeId":"n2","outputs":{}}'],
      [9, null, '{"nodeId": "n1", "error": {}}'],
      [10 + 1024, null, '{}'],
      [0, 'vendor.custom', '{"nodeId":"n1","x":1}'],
      [0, 'goal.created', '{"goalId":"g1"}'],
    ]);
    expect(stored.map((r) => r.name)).toEqual(['run.started', 'node.started', 'node.completed', 'node.completed', 'node.failed', 'node.suspended', 'vendor.custom', 'goal.created']);
    const columns = ((await ds.query(`SELECT "attname" FROM pg_attribute WHERE "attrelid" = '"event"'::regclass AND "attnum" > 0 AND NOT "attisdropped" ORDER BY "attnum"`)) as Array<{ attname: string }>).map((r) => r.attname);
    expect(columns).toEqual(['stream_key', 'sequence', 'created_at', 'id', 'code', 'tenant', 'workspace', 'type', 'payload', 'correlation_id', 'causation_id', 'node_id']);
    const indexes = ((await ds.query(`SELECT "indexname" FROM pg_indexes WHERE "tablename" = 'event' ORDER BY 1`)) as Array<{ indexname: string }>).map((r) => r.indexname);
    expect(indexes).toEqual(['event_stream_seq_uq', 'event_tool_call_idx']);

    // The webhook outbox enqueues a coded event by its type's name, and an uncoded one by its text.
    await ds.query(`INSERT INTO "webhook_subscription" ("id", "tenant", "principal", "url", "events", "secret_ref", "secret_fingerprint") VALUES ('wh-1', 'acme', 'p', 'https://example.com/h', '{run.completed,vendor.other}', gen_random_uuid(), 'fp')`);
    await ds.query(`INSERT INTO "event" ("stream_key", "sequence", "tenant", "code", "payload") VALUES ($1, 8, 'acme', 2, '{}')`, [key]);
    await ds.query(`INSERT INTO "event" ("stream_key", "sequence", "tenant", "type", "payload") VALUES ($1, 9, 'acme', 'vendor.other', '{}'), ($1, 10, 'acme', 'vendor.third', '{}')`, [key]);
    const deliveries = (await ds.query(`SELECT "run_id", "sequence", "event_type" FROM "webhook_delivery" ORDER BY "sequence"`)) as Array<Record<string, string>>;
    expect(deliveries).toEqual([
      { run_id: run, sequence: '8', event_type: 'run.completed' },
      { run_id: run, sequence: '9', event_type: 'vendor.other' },
    ]);
    await ds.query(`DELETE FROM "webhook_delivery"`);
    await ds.query(`DELETE FROM "event" WHERE "stream_key" = $1 AND "sequence" > 7`, [key]);

    // Down: the rows as they were; and up again from there.
    await migrate(ds, 'down');
    expect(await readBefore(ds)).toEqual(before);
    const fns = (await ds.query(`SELECT 1 FROM pg_proc WHERE "proname" = 'event_type_name'`)) as unknown[];
    expect(fns).toHaveLength(0);
    await migrate(ds, 'up');
    expect(await readAfter(ds)).toEqual(before);
  });
});
