import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import type { PeriodicTaskService } from '../scheduler/periodic-task.service';
import { OutboxOptions, OutboxWorker } from './outbox-worker';

interface Row {
  id: string;
  payload: string;
  attempts: number;
}

/**
 * The outbox worker on a real table (a temporary one of this file's connection): its claims, their
 * lease and fence, and its pass's concurrency.
 */
describe('OutboxWorker', () => {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  let client: Client;
  /** TypeORM's answer shape: an UPDATE's rows with its count. */
  let ds: DataSource;
  const noScheduler = {} as PeriodicTaskService;

  const worker = (o: Partial<OutboxOptions<Row>> = {}) =>
    new OutboxWorker<Row>(ds, noScheduler, {
      name: 'test.outbox',
      table: 'outbox_spec',
      key: 'id',
      returning: ['id', 'payload', 'attempts'],
      poll: false,
      pollMs: 1000,
      concurrency: 2,
      leaseMs: 60_000,
      attempt: async () => undefined,
      failed: () => undefined,
      ...o,
    });
  const insert = async (n: number, due = true) =>
    (
      await client.query<{ id: string }>(
        `INSERT INTO outbox_spec (payload, next_attempt_at) SELECT 'p' || g, now() + CASE WHEN $2 THEN interval '0' ELSE interval '1 hour' END - (g * interval '1 millisecond')
           FROM generate_series(1, $1::int) g RETURNING id`,
        [n, due],
      )
    ).rows.map((r) => r.id);
  const rowOf = async (id: string) => (await client.query(`SELECT status, attempts, note, next_attempt_at > now() + interval '30 seconds' AS leased FROM outbox_spec WHERE id = $1`, [id])).rows[0];

  beforeAll(async () => {
    client = new Client({ connectionString: url });
    await client.connect();
    await client.query(`CREATE TEMP TABLE outbox_spec (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(), payload text NOT NULL, status text NOT NULL DEFAULT 'pending',
      attempts int NOT NULL DEFAULT 0, next_attempt_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(), note text)`);
    ds = {
      query: async (sql: string, params: unknown[]) => {
        const r = await client.query(sql, params);
        return r.command === 'UPDATE' ? [r.rows, r.rowCount] : r.rows;
      },
    } as unknown as DataSource;
  });

  beforeEach(async () => {
    await client.query(`TRUNCATE outbox_spec`);
  });

  afterAll(async () => {
    await client?.end();
  });

  it('claims due rows oldest first, up to the limit, each under a lease another claim skips', async () => {
    const due = await insert(3);
    await insert(1, false);
    const w = worker();
    const first = await w.claim(2);
    // The oldest due rows (inserted with earlier next_attempt_at the higher their number).
    expect(first.map((r) => r.id).sort()).toEqual([due[1], due[2]].sort());
    expect(first.every((r) => r.attempts === 1)).toBe(true);
    expect(await rowOf(first[0].id)).toMatchObject({ status: 'delivering', attempts: 1, leased: true });
    const second = await w.claim(5);
    expect(second.map((r) => r.id)).toEqual([due[0]]);
    expect(await w.claim(5)).toEqual([]);
  });

  it('claims the pending rows of the keys named, whenever they are due, and nothing for none', async () => {
    const [later] = await insert(1, false);
    const w = worker();
    expect(await w.claim([])).toEqual([]);
    expect((await w.claim([later])).map((r) => r.id)).toEqual([later]);
    // Claimed (delivering): not claimed again by key.
    expect(await w.claim([later])).toEqual([]);
  });

  it("fences an attempt's finish: once another claim took the row over, the first finish writes nothing", async () => {
    const [id] = await insert(1);
    const w = worker();
    const [mine] = await w.claim(1);
    // The lease runs out and another replica claims the row (attempt 2).
    await client.query(`UPDATE outbox_spec SET next_attempt_at = now() - interval '1 second' WHERE id = $1`, [id]);
    const [theirs] = await w.claim(1);
    expect(theirs).toMatchObject({ id, attempts: 2 });
    await w.finish(mine, { status: `'done'`, note: '$3' }, ['late']);
    expect(await rowOf(id)).toMatchObject({ status: 'delivering', attempts: 2, note: null });
    await w.finish(theirs, { status: `'done'`, note: '$3' }, ['kept']);
    expect(await rowOf(id)).toMatchObject({ status: 'done', attempts: 2, note: 'kept' });
  });

  it('a pass starts no more attempts than its concurrency, and a freed slot lets the next pass take more', async () => {
    await insert(5);
    const started: string[] = [];
    const release: Array<() => void> = [];
    const ended: Array<Promise<void>> = [];
    const w = worker({
      concurrency: 2,
      attempt: (row) => {
        started.push(row.id);
        const done = (async () => {
          await new Promise<void>((r) => release.push(r));
          await w.finish(row, { status: `'done'` });
        })();
        ended.push(done);
        return done;
      },
    });
    /** Releases the attempts started so far and waits until their slots are free again. */
    const finishStarted = async (n = release.length) => {
      const waiting = ended.slice(0, n);
      for (const r of release.splice(0, n)) r();
      await Promise.all(waiting);
      ended.splice(0, n);
      // The worker frees a slot in the attempt's `finally`, a turn after it ended.
      await new Promise((r) => setImmediate(r));
    };
    w.start();
    await w.pass();
    expect(started).toHaveLength(2);
    await w.pass();
    expect(started).toHaveLength(2);
    await finishStarted(1);
    await w.pass();
    expect(started).toHaveLength(3);
    await finishStarted();
    await w.pass();
    expect(started).toHaveLength(5);
    await finishStarted();
    await w.stop();
    expect(new Set(started).size).toBe(5);
    expect(Number((await client.query(`SELECT count(*) AS n FROM outbox_spec WHERE status = 'done'`)).rows[0].n)).toBe(5);
  });

  it('tells a failed claim and a thrown attempt to its owner, and refuses a table name that is not a plain identifier', async () => {
    await insert(1);
    const failures: string[] = [];
    const w = worker({
      attempt: async () => {
        throw new Error('boom');
      },
      failed: (what, err) => failures.push(`${what}: ${(err as Error).message}`),
    });
    w.start();
    await w.pass();
    await w.stop();
    expect(failures).toEqual(['attempt: boom']);
    const broken = worker({ table: 'no_such_outbox_table', failed: (what) => failures.push(what) });
    broken.start();
    await broken.pass();
    expect(failures).toEqual(['attempt: boom', 'claim']);
    expect(() => worker({ table: 'x"; DROP TABLE y; --' })).toThrow(/plain identifier/);
  });
});
