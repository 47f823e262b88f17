import { DeadlineClient, isDatabaseUnavailable, REPLAN_AFTER_EXECUTIONS } from './database-driver';
import { announceEmbedded, EMBEDDED_PARAMETER, EMBEDDED_STATUS, lastReadyStatus, message, readyForQuery } from './wire-protocol';

/** A Node system error as net sockets raise it (code, errno, syscall). */
function systemError(code: string, syscall: string): Error {
  return Object.assign(new Error(`${syscall} ${code}`), { code, errno: -104, syscall });
}

/** Whether pg has no query running or waiting on the client. */
function idle(client: DeadlineClient): boolean {
  const internals = client as unknown as { _activeQuery?: unknown; _queryQueue: unknown[] };
  return internals._activeQuery == null && internals._queryQueue.length === 0;
}

describe('isDatabaseUnavailable', () => {
  it('recognizes a reset, refused or broken database socket, bare or wrapped by TypeORM', () => {
    expect(isDatabaseUnavailable(systemError('ECONNRESET', 'read'))).toBe(true);
    expect(isDatabaseUnavailable(systemError('ECONNREFUSED', 'connect'))).toBe(true);
    expect(isDatabaseUnavailable(systemError('EPIPE', 'write'))).toBe(true);
    const wrapped = Object.assign(new Error('read ECONNRESET'), { name: 'QueryFailedError', driverError: systemError('ECONNRESET', 'read') });
    expect(isDatabaseUnavailable(wrapped)).toBe(true);
  });

  it('recognizes the SQLSTATEs of a server shutting down, starting or timing out', () => {
    expect(isDatabaseUnavailable(Object.assign(new Error('terminating connection'), { severity: 'FATAL', code: '57P01' }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('canceling statement'), { severity: 'ERROR', code: '57014' }))).toBe(true);
  });

  it("recognizes pg's own connection errors of a statement sent on a pool client directly (no server answer, no severity)", () => {
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isDatabaseUnavailable(new Error('Client has encountered a connection error and is not queryable'))).toBe(true);
    // The same words from the server (a severity) are an answer, not a lost connection.
    expect(isDatabaseUnavailable(Object.assign(new Error('Connection terminated by a trigger'), { severity: 'ERROR', code: 'P0001' }))).toBe(false);
  });

  it('does not take a client that aborted its request body (no syscall), or an ordinary SQL error, for an outage', () => {
    expect(isDatabaseUnavailable(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))).toBe(false);
    expect(isDatabaseUnavailable(Object.assign(new Error('duplicate key'), { severity: 'ERROR', code: '23505' }))).toBe(false);
    expect(isDatabaseUnavailable(new Error('something else'))).toBe(false);
  });
});

describe('DeadlineClient on the embedded engine reached by address', () => {
  it("the wire server's startup answer says so, before its ReadyForQuery", () => {
    const auth = message(0x52, Buffer.from([0, 0, 0, 0]));
    const answer = announceEmbedded(Buffer.concat([auth, readyForQuery('I')]));
    expect(answer).toEqual(Buffer.concat([auth, EMBEDDED_STATUS, readyForQuery('I')]));
    expect(lastReadyStatus(answer)).toBe('I');
  });

  it('a client that hears it still names statements (the wire server keeps each connection\'s names apart)', () => {
    const client = new DeadlineClient({ connectionString: 'postgres://postgres@localhost/postgres' });
    const connection = (client as unknown as { connection: { emit(event: string, m: unknown): void } }).connection;
    connection.emit('parameterStatus', { parameterName: EMBEDDED_PARAMETER, parameterValue: 'on' });
    expect(client.preparedStatements).toBe(true);
  });
});

describe('DeadlineClient and prepared statements', () => {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const embedded = process.env.OPENWOP_TEST_DB_MODE === 'embedded';

  async function prepared(client: DeadlineClient): Promise<string[]> {
    return ((await client.query(`SELECT "name" FROM pg_prepared_statements ORDER BY 1`)) as { rows: Array<{ name: string }> }).rows.map((r) => r.name);
  }

  (embedded ? it.skip : it)('sends a named statement as a prepared statement, and unnamed when prepared statements are off', async () => {
    const on = new DeadlineClient({ connectionString: url });
    const off = new DeadlineClient({ connectionString: url, preparedStatements: false });
    await Promise.all([on.connect(), off.connect()]);
    try {
      const q = { name: 'openwop_driver_spec', text: 'SELECT $1::int + 1 AS "n"', values: [41] };
      expect((await on.query(q)).rows).toEqual([{ n: 42 }]);
      expect((await off.query(q)).rows).toEqual([{ n: 42 }]);
      expect(await prepared(on)).toEqual(['openwop_driver_spec']);
      expect(await prepared(off)).toEqual([]);
    } finally {
      await Promise.all([on.end(), off.end()]);
    }
  });

  (embedded ? it.skip : it)('prepares a statement again after REPLAN_AFTER_EXECUTIONS runs on its plan, never inside a transaction', async () => {
    const client = new DeadlineClient({ connectionString: url });
    await client.connect();
    const q = { name: 'openwop_driver_spec_replan', text: 'SELECT $1::int AS "n"', values: [1] };
    const preparedAt = async () => ((await client.query(`SELECT "prepare_time" FROM pg_prepared_statements WHERE "name" = $1`, [q.name])) as { rows: Array<{ prepare_time: Date }> }).rows[0]?.prepare_time.getTime();
    try {
      for (let i = 0; i < REPLAN_AFTER_EXECUTIONS; i++) await client.query(q);
      const first = await preparedAt();
      expect(first).toBeDefined();
      await new Promise((r) => setTimeout(r, 5));
      // One more, inside a transaction: the plan is kept until the transaction ends.
      await client.query('BEGIN');
      await client.query(q);
      expect(await preparedAt()).toBe(first);
      await client.query('COMMIT');
      await client.query(q);
      expect(await preparedAt()).toBeGreaterThan(first!);
      expect((await client.query(q)).rows).toEqual([{ n: 1 }]);
    } finally {
      await client.end();
    }
  });

  /** A statement prepared on `client` (its answer checked) whose table then gained a column: its plan is stale. */
  async function staleStatement(client: DeadlineClient, name: string): Promise<{ name: string; text: string; values: unknown[] }> {
    const table = `${name}_${process.pid}_${Date.now()}`;
    await client.query(`CREATE TEMP TABLE "${table}" (a int)`);
    await client.query(`INSERT INTO "${table}" VALUES (1)`);
    const q = { name, text: `SELECT * FROM "${table}"`, values: [] };
    expect((await client.query(q)).rows).toEqual([{ a: 1 }]);
    await client.query(`ALTER TABLE "${table}" ADD COLUMN b int`);
    return q;
  }

  (embedded ? it.skip : it)('a prepared statement whose result columns changed fails once, then is prepared again', async () => {
    const client = new DeadlineClient({ connectionString: url });
    await client.connect();
    try {
      const q = await staleStatement(client, 'openwop_driver_spec_star');
      await expect(client.query(q)).rejects.toMatchObject({ code: '0A000' });
      // The statement was deallocated before the failure was heard: nothing is left running or
      // queued on the connection behind the caller's back (the next query would queue behind it).
      expect(idle(client)).toBe(true);
      expect((await client.query(q)).rows).toEqual([{ a: 1, b: null }]);
    } finally {
      await client.end();
    }
  });

  (embedded ? it.skip : it)('a stale prepared statement met inside a transaction is prepared again at its first use after it', async () => {
    const client = new DeadlineClient({ connectionString: url });
    await client.connect();
    try {
      const q = await staleStatement(client, 'openwop_driver_spec_tx_star');
      await client.query('BEGIN');
      // The DEALLOCATE cannot run in the aborted transaction; the server still holds the name.
      await expect(client.query(q)).rejects.toMatchObject({ code: '0A000' });
      expect(idle(client)).toBe(true);
      await client.query('ROLLBACK');
      expect((await client.query(q)).rows).toEqual([{ a: 1, b: null }]);
      expect((await client.query(q)).rows).toEqual([{ a: 1, b: null }]);
    } finally {
      await client.end();
    }
  });
});
