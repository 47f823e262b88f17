/**
 * The lean event store migration (1765100070000) on a populated database: every event keeps its id,
 * stream, sequence, type, payload and columns; the stream's (tenant, stream_id, sequence) becomes the
 * key (a second event at a taken place is refused) and `id` is no longer unique-indexed but still
 * defaulted; payloads are stored as `json`. Its `down` gives the rows back as they were.
 */
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { LeanEventStore1765100070000 } from '../../migrations/1765100070000-lean-event-store';
import { runMigrations } from '../../src/platform/database/migration-runner';
import { migrateUpTo, useScratchDataSource } from '../support/scratch-db';

const NAME = 'LeanEventStore1765100070000';

interface Row {
  id: string;
  tenant: string;
  workspace: string | null;
  stream_id: string;
  sequence: string;
  type: string;
  payload: unknown;
  correlation_id: string | null;
  causation_id: string | null;
  node_id: string | null;
  created_at: string;
}

const readAll = async (ds: DataSource): Promise<Row[]> =>
  (await ds.query(
    `SELECT "id", "tenant", "workspace", "stream_id", "sequence", "type", "payload", "correlation_id", "causation_id", "node_id", "created_at"::text AS "created_at"
     FROM "event" ORDER BY "tenant", "stream_id", "sequence"`,
  )) as Row[];

const keyOf = async (ds: DataSource): Promise<string[]> =>
  ((await ds.query(
    `SELECT a."attname" AS "name" FROM pg_index x JOIN pg_attribute a ON a."attrelid" = x."indrelid" AND a."attnum" = ANY(x."indkey")
     WHERE x."indrelid" = '"event"'::regclass AND x."indisprimary" ORDER BY array_position(x."indkey"::int2[], a."attnum")`,
  )) as Array<{ name: string }>).map((r) => r.name);

describe('the lean event store migration', () => {
  const scratch = useScratchDataSource();
  let ds: DataSource;

  beforeAll(() => {
    ds = scratch.ds;
  });

  it('keeps every event, keys them by their stream and stores payloads as written', async () => {
    const i = await migrateUpTo(ds, NAME);
    const run = randomUUID();
    const cause = randomUUID();
    const payloads = [
      { workflowId: 'acme.ship', inputs: { n: 1.5, list: [1, 'two', null], nested: { a: true } } },
      { nodeId: 'n1', typeId: 'core.noop', attempt: 0 },
      { nodeId: 'n1', outputs: { text: 'héllo "quoted" \\ back' }, durationMs: 3 },
    ];
    for (const [k, p] of payloads.entries()) {
      await ds.query(
        `INSERT INTO "event" ("id", "tenant", "workspace", "stream_id", "sequence", "type", "payload", "correlation_id", "causation_id", "node_id", "created_at")
         VALUES ($1, 'acme', 'ws-1', $2, $3, $4, $5::jsonb, $6, $7, $8, now() - interval '1 day')`,
        [k === 0 ? cause : randomUUID(), run, k + 1, ['run.started', 'node.started', 'node.completed'][k], JSON.stringify(p), k ? 'corr-1' : null, k ? cause : null, k ? 'n1' : null],
      );
    }
    // The host stream of two tenants: the same stream id and sequences, apart by tenant.
    await ds.query(`INSERT INTO "event" ("tenant", "stream_id", "sequence", "type", "payload") VALUES ('acme', 'host', 1, 'goal.created', '{"goalId":"g1"}'), ('globex', 'host', 1, 'goal.created', '{"goalId":"g2"}')`);
    const before = await readAll(ds);
    expect(before).toHaveLength(5);

    expect(await runMigrations(ds, MIGRATIONS.slice(i, i + 1))).toEqual([NAME]);
    expect(await readAll(ds)).toEqual(before);
    expect(await keyOf(ds)).toEqual(['tenant', 'stream_id', 'sequence']);
    const [{ type }] = (await ds.query(`SELECT format_type("atttypid", "atttypmod") AS "type" FROM pg_attribute WHERE "attrelid" = '"event"'::regclass AND "attname" = 'payload'`)) as Array<{ type: string }>;
    expect(type).toBe('json');
    const indexes = ((await ds.query(`SELECT "indexname" FROM pg_indexes WHERE "tablename" = 'event' ORDER BY 1`)) as Array<{ indexname: string }>).map((r) => r.indexname);
    expect(indexes).toEqual(['event_stream_seq_uq', 'event_tool_call_idx']);

    // A second event at a taken place is refused; an event without an id gets one; a payload is kept as its text.
    await expect(ds.query(`INSERT INTO "event" ("tenant", "stream_id", "sequence", "type", "payload") VALUES ('acme', $1, 2, 'x', '{}')`, [run])).rejects.toMatchObject({ driverError: { code: '23505' } });
    await ds.query(`INSERT INTO "event" ("tenant", "stream_id", "sequence", "type", "payload") VALUES ('acme', $1, 4, 'run.completed', '{"z":1,"a":{"y":2,"b":3}}')`, [run]);
    const [added] = (await ds.query(`SELECT "id", "payload"::text AS "text" FROM "event" WHERE "stream_id" = $1 AND "sequence" = 4`, [run])) as Array<{ id: string; text: string }>;
    expect(added.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(added.text).toBe('{"z":1,"a":{"y":2,"b":3}}');

    // Down: the same rows again, keyed by id, payloads as jsonb.
    const runner = ds.createQueryRunner();
    try {
      await new LeanEventStore1765100070000().down(runner);
    } finally {
      await runner.release();
    }
    const after = await readAll(ds);
    expect(after.filter((r) => r.sequence !== '4' || r.stream_id !== run)).toEqual(before);
    expect(await keyOf(ds)).toEqual(['id']);
  });
});
