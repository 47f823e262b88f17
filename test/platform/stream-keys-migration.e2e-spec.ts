/**
 * The stream keys migration (1765200500000) on a populated database: every stream row gets a key of
 * its own, every event keeps its id, tenant, workspace, stream (through the key), sequence, type,
 * payload text and columns; the event's key is (stream_key, sequence); a stream that had events but
 * no counter row gets one; the webhook outbox trigger still enqueues a run's events (and not the host
 * stream's). Its `down` gives the rows back as they were, keyed by (tenant, stream_id, sequence).
 */
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { StreamKeys1765200500000 } from '../../migrations/1765200500000-stream-keys';
import { runMigrations } from '../../src/platform/database/migration-runner';
import { migrateUpTo, runOneMigration, useScratchDataSource } from '../support/scratch-db';

const NAME = 'StreamKeys1765200500000';

interface Row {
  id: string;
  tenant: string;
  workspace: string | null;
  stream_id: string;
  sequence: string;
  type: string;
  payload: string;
  correlation_id: string | null;
  causation_id: string | null;
  node_id: string | null;
  created_at: string;
}

const COLUMNS = `e."id", e."tenant", e."workspace", $STREAM AS "stream_id", e."sequence", e."type", e."payload"::text AS "payload", e."correlation_id", e."causation_id", e."node_id", e."created_at"::text AS "created_at"`;

const readBefore = async (ds: DataSource): Promise<Row[]> =>
  (await ds.query(`SELECT ${COLUMNS.replace('$STREAM', 'e."stream_id"')} FROM "event" e ORDER BY e."tenant", e."stream_id", e."sequence"`)) as Row[];

const readAfter = async (ds: DataSource): Promise<Row[]> =>
  (await ds.query(
    `SELECT ${COLUMNS.replace('$STREAM', 's."stream_id"')} FROM "event" e JOIN "event_stream" s ON s."key" = e."stream_key" ORDER BY s."tenant", s."stream_id", e."sequence"`,
  )) as Row[];

const keyOf = async (ds: DataSource): Promise<string[]> =>
  ((await ds.query(
    `SELECT a."attname" AS "name" FROM pg_index x JOIN pg_attribute a ON a."attrelid" = x."indrelid" AND a."attnum" = ANY(x."indkey")
     WHERE x."indrelid" = '"event"'::regclass AND x."indisprimary" ORDER BY array_position(x."indkey"::int2[], a."attnum")`,
  )) as Array<{ name: string }>).map((r) => r.name);

const streams = async (ds: DataSource) =>
  (await ds.query(`SELECT "tenant", "stream_id", "last_sequence" FROM "event_stream" ORDER BY 1, 2`)) as Array<{ tenant: string; stream_id: string; last_sequence: string }>;

const migrate = (ds: DataSource, how: 'up' | 'down') => runOneMigration(ds, new StreamKeys1765200500000(), how);

describe('the stream keys migration', () => {
  const scratch = useScratchDataSource();
  let ds: DataSource;

  beforeAll(() => {
    ds = scratch.ds;
  });

  it('keys every stream by a number and keeps every event, and down gives them back', async () => {
    const i = await migrateUpTo(ds, NAME);
    const run = randomUUID();
    const other = randomUUID();
    const cause = randomUUID();
    const payloads = [
      '{"workflowId":"acme.ship","inputs":{"n":1.5,"list":[1,"two",null],"nested":{"a":true}}}',
      '{"nodeId":"n1","typeId":"core.noop","attempt":0}',
      '{"z":1,"nodeId":"n1","outputs":{"text":"héllo \\"quoted\\" \\\\ back"},"durationMs":3}',
    ];
    for (const [k, p] of payloads.entries()) {
      await ds.query(
        `INSERT INTO "event" ("id", "tenant", "workspace", "stream_id", "sequence", "type", "payload", "correlation_id", "causation_id", "node_id", "created_at")
         VALUES ($1, 'acme', 'ws-1', $2, $3, $4, $5::json, $6, $7, $8, now() - interval '1 day')`,
        [k === 0 ? cause : randomUUID(), run, k + 1, ['run.started', 'node.started', 'node.completed'][k], p, k ? 'corr-1' : null, k ? cause : null, k ? 'n1' : null],
      );
    }
    await ds.query(`INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") VALUES ('acme', $1, 3), ('acme', 'host', 1), ('globex', 'host', 1)`, [run]);
    // The host stream of two tenants: the same stream id and sequences, apart by tenant.
    await ds.query(`INSERT INTO "event" ("tenant", "stream_id", "sequence", "type", "payload") VALUES ('acme', 'host', 1, 'goal.created', '{"goalId":"g1"}'), ('globex', 'host', 1, 'goal.created', '{"goalId": "g2"}')`);
    // A stream with events but no counter row (the host always writes both; the migration must not lose them).
    await ds.query(`INSERT INTO "event" ("tenant", "stream_id", "sequence", "type", "payload") VALUES ('globex', $1, 1, 'run.started', '{}'), ('globex', $1, 2, 'run.completed', '{}')`, [other]);
    const before = await readBefore(ds);
    expect(before).toHaveLength(7);
    const streamsBefore = await streams(ds);

    expect(await runMigrations(ds, MIGRATIONS.slice(i, i + 1))).toEqual([NAME]);
    expect(await readAfter(ds)).toEqual(before);
    expect(await keyOf(ds)).toEqual(['stream_key', 'sequence']);
    expect(await streams(ds)).toEqual([...streamsBefore, { tenant: 'globex', stream_id: other, last_sequence: '2' }].sort((a, b) => (a.tenant + a.stream_id < b.tenant + b.stream_id ? -1 : 1)));
    const keys = (await ds.query(`SELECT "key" FROM "event_stream"`)) as Array<{ key: string }>;
    expect(new Set(keys.map((k) => k.key)).size).toBe(4);
    const indexes = ((await ds.query(`SELECT "indexname" FROM pg_indexes WHERE "tablename" IN ('event', 'event_stream') ORDER BY 1`)) as Array<{ indexname: string }>).map((r) => r.indexname);
    expect(indexes).toEqual(expect.arrayContaining(['event_stream_key_uq', 'event_stream_seq_uq', 'event_tool_call_idx']));
    expect(indexes).toHaveLength(4);
    const columns = ((await ds.query(`SELECT "attname" FROM pg_attribute WHERE "attrelid" = '"event"'::regclass AND "attnum" > 0 AND NOT "attisdropped" ORDER BY "attnum"`)) as Array<{ attname: string }>).map((r) => r.attname);
    expect(columns).toEqual(['stream_key', 'sequence', 'created_at', 'id', 'tenant', 'workspace', 'type', 'payload', 'correlation_id', 'causation_id', 'node_id']);

    // A new stream takes the next key (higher than every key yet); a second event at a taken place is refused; an event without an id gets one.
    const [{ key: fresh }] = (await ds.query(`INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") VALUES ('acme', 'fresh', 1) RETURNING "key"`)) as Array<{ key: string }>;
    expect(Number(fresh)).toBeGreaterThan(Math.max(...keys.map((k) => Number(k.key))));
    const [{ key: runKey }] = (await ds.query(`SELECT "key" FROM "event_stream" WHERE "tenant" = 'acme' AND "stream_id" = $1`, [run])) as Array<{ key: string }>;
    await expect(ds.query(`INSERT INTO "event" ("stream_key", "tenant", "sequence", "type", "payload") VALUES ($1, 'acme', 2, 'x', '{}')`, [runKey])).rejects.toMatchObject({ driverError: { code: '23505' } });

    // The webhook outbox still enqueues a run's events by its stream id, never the host stream's.
    await ds.query(`INSERT INTO "webhook_subscription" ("id", "tenant", "principal", "url", "events", "secret_ref", "secret_fingerprint") VALUES ('wh-1', 'acme', 'p', 'https://example.com/h', '{run.completed,goal.created}', gen_random_uuid(), 'fp')`);
    await ds.query(`INSERT INTO "event" ("stream_key", "tenant", "workspace", "sequence", "type", "payload") VALUES ($1, 'acme', 'ws-1', 4, 'run.completed', '{}')`, [runKey]);
    const [{ key: hostKey }] = (await ds.query(`SELECT "key" FROM "event_stream" WHERE "tenant" = 'acme' AND "stream_id" = 'host'`)) as Array<{ key: string }>;
    await ds.query(`INSERT INTO "event" ("stream_key", "tenant", "sequence", "type", "payload") VALUES ($1, 'acme', 2, 'goal.created', '{}')`, [hostKey]);
    const deliveries = (await ds.query(`SELECT "run_id", "sequence", "event_type" FROM "webhook_delivery"`)) as Array<Record<string, string>>;
    expect(deliveries).toEqual([{ run_id: run, sequence: '4', event_type: 'run.completed' }]);
    await ds.query(`DELETE FROM "event" WHERE ("stream_key" = $1 AND "sequence" = 4) OR ("stream_key" = $2 AND "sequence" = 2)`, [runKey, hostKey]);
    await ds.query(`DELETE FROM "event_stream" WHERE "stream_id" = 'fresh'`);

    // Down: the same rows again, keyed by (tenant, stream_id, sequence), the stream rows without a key.
    await migrate(ds, 'down');
    expect(await readBefore(ds)).toEqual(before);
    expect(await keyOf(ds)).toEqual(['tenant', 'stream_id', 'sequence']);
    const streamColumns = ((await ds.query(`SELECT "attname" FROM pg_attribute WHERE "attrelid" = '"event_stream"'::regclass AND "attnum" > 0 AND NOT "attisdropped"`)) as Array<{ attname: string }>).map((r) => r.attname);
    expect(streamColumns).not.toContain('key');
    // And up again from there.
    await migrate(ds, 'up');
    expect(await readAfter(ds)).toEqual(before);
  });
});
