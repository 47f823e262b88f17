import type * as pg from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import { isDatabaseUnavailable } from './database-driver';
import { rowsOf } from './rows';
import { WiringFault } from '../errors/internal-fault';

/**
 * A statement of fixed text that is sent as a named prepared statement: PostgreSQL parses and plans
 * it once per connection instead of at every call (for the engine's large statements that was most
 * of their database time). Its text never varies with the values (they are parameters, lists as
 * arrays or JSON), and it names its result columns instead of `*`, so a column another replica adds
 * does not change the result of a statement already prepared. Connections configured without
 * prepared statements (a pooler, the embedded engine) send the same text unnamed.
 */
export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

const registered = new Map<string, string>();

/** Declares a prepared statement; a name is bound to one text for the life of the process. */
export function preparedStatement(name: string, text: string): PreparedStatement {
  const full = `openwop_${name}`;
  const prior = registered.get(full);
  if (prior !== undefined && prior !== text) throw new WiringFault(`prepared statement ${name} was declared with two texts`);
  registered.set(full, text);
  return Object.freeze({ name: full, text });
}

const preparedPools = new WeakMap<DataSource, pg.Pool>();

/** The pool whose sessions plan prepared statements generically (see openPreparedPool), for this data source. */
export function usePreparedPool(ds: DataSource, pool: pg.Pool): void {
  preparedPools.set(ds, pool);
}

/** The pool the prepared statements of a data source run on: its own, else the data source's (the same settings and deadline). */
function poolOf(ds: DataSource): pg.Pool {
  const pool = preparedPools.get(ds) ?? (ds.driver as unknown as { master?: pg.Pool }).master;
  if (!pool) throw new WiringFault('the data source is not connected');
  return pool;
}

function isDataSource(target: DataSource | EntityManager): target is DataSource {
  return typeof (target as DataSource).createQueryRunner === 'function';
}

/**
 * Runs a prepared statement and answers its rows: on the data source's pool directly (no query
 * runner around it), or on the connection of the caller's transaction when given its manager.
 */
export async function runPrepared<T>(target: DataSource | EntityManager, stmt: PreparedStatement, values: unknown[]): Promise<T[]> {
  const config = { name: stmt.name, text: stmt.text, values };
  if (isDataSource(target)) {
    // A client of the pool, asked with a promise: the client-side query deadline applies (the pool's
    // own query() passes a callback, which the deadline does not wrap), and a client whose connection
    // broke is destroyed instead of going back to the pool.
    const client = await poolOf(target).connect();
    let broken: Error | undefined;
    try {
      return (await client.query(config)).rows as T[];
    } catch (e) {
      if (isDatabaseUnavailable(e)) broken = e as Error;
      throw e;
    } finally {
      client.release(broken);
    }
  }
  const runner = target.queryRunner;
  if (runner && !runner.isReleased) {
    const client = (await runner.connect()) as pg.PoolClient;
    return (await client.query(config)).rows as T[];
  }
  return rowsOf<T>(await target.query(stmt.text, values));
}
