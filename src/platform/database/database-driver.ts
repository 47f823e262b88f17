import type * as Pg from 'pg';

/**
 * The `pg` module. pg decides as it loads whether it runs in a Cloudflare Worker; on a Node without a
 * `navigator` global (Node 20) it finds out by constructing a fetch `Response`, which loads all of
 * Node's fetch implementation (undici) into every host at start for nothing (about 0.1 s of CPU,
 * several times that on a busy machine). While pg loads, and only then, a `navigator` that says
 * Node.js (as Node 21 and later have) answers the question.
 */
export const pg: typeof Pg = (() => {
  const g = globalThis as { navigator?: unknown };
  if (g.navigator !== undefined) return require('pg') as typeof Pg;
  g.navigator = { userAgent: `Node.js/${process.versions.node.split('.')[0]}` };
  try {
    return require('pg') as typeof Pg;
  } finally {
    delete g.navigator;
  }
})();

/** Marks an error that says the database cannot be reached right now (not that a statement is wrong). */
export const DATABASE_UNAVAILABLE = Symbol.for('openwop-host.database-unavailable');

/** A query the database did not answer within the client-side deadline; its connection is closed. */
export class DatabaseTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(readonly timeoutMs: number) {
    super(`the database did not answer within ${timeoutMs} ms`);
    this.name = 'DatabaseTimeoutError';
    (this as unknown as Record<symbol, boolean>)[DATABASE_UNAVAILABLE] = true;
  }
}

function tag<T>(err: T): T {
  if (err && typeof err === 'object') (err as Record<symbol, boolean>)[DATABASE_UNAVAILABLE] = true;
  return err;
}

/**
 * SQLSTATEs that mean "try again later": the server is shutting down or starting, refuses more
 * connections, or a statement/lock/idle timeout cut the work (the statement itself may be fine).
 */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '08000', '08001', '08003', '08004', '08006', '57014', '55P03', '25P03']);
const CONNECTION_LOST = /Connection terminated|Client has encountered a connection error|not queryable|timeout exceeded when trying to connect|Query read timeout/;
/**
 * Socket errors of the database connection (a reset, a refused connect, a broken pipe). They carry
 * the failing `syscall`, which tells them from a client that aborted its request body (Node's
 * `aborted` error, code ECONNRESET, no syscall), a 400 of the HTTP layer.
 */
const SOCKET_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);

/** Whether an error (a TypeORM QueryFailedError, a pg or pool error) means the database is unavailable. */
export function isDatabaseUnavailable(e: unknown): boolean {
  const seen = new Set<unknown>();
  const stack: unknown[] = [e];
  while (stack.length) {
    const x = stack.pop() as Record<string | symbol, unknown> | null | undefined;
    if (!x || typeof x !== 'object' || seen.has(x)) continue;
    seen.add(x);
    if (x[DATABASE_UNAVAILABLE] === true) return true;
    if (typeof x.severity === 'string' && typeof x.code === 'string' && UNAVAILABLE_STATES.has(x.code)) return true;
    if (typeof x.code === 'string' && SOCKET_CODES.has(x.code) && typeof x.syscall === 'string') return true;
    // A query whose connection broke under it: TypeORM wraps pg's error as `driverError`; a statement
    // sent on a pool client directly (a prepared one) gets pg's own error, which no server answer carries.
    if (x.name === 'QueryFailedError' && x.driverError instanceof Error && CONNECTION_LOST.test(x.driverError.message)) return true;
    if (x instanceof Error && typeof x.severity !== 'string' && CONNECTION_LOST.test(x.message)) return true;
    stack.push(x.driverError, x.cause);
    if (Array.isArray(x.errors)) stack.push(...x.errors);
  }
  return false;
}

export interface ClientDeadline {
  /** Client-side deadline of one query in ms (0: none): past it the query fails and its connection is closed. */
  queryDeadlineMs?: number;
  /** Whether a query config's `name` is honoured (a named prepared statement); false: every statement is sent unnamed. */
  preparedStatements?: boolean;
}

/** PostgreSQL's answer when a prepared statement's result columns changed under it (a migration of another replica). */
const STALE_PLAN = /cached plan must not change result type/;

/**
 * How many times a connection runs a prepared statement on one plan. The plan is generic (one for
 * every value) and made with the table sizes of its first execution: made while a table was nearly
 * empty (a fresh database, a truncated table) it may scan that table whole, for as long as the
 * statement lives or until an ANALYZE of the table invalidates it (autovacuum's, a minute or more
 * later), and a busy engine fills a table fast. Prepared again after this many executions (outside a
 * transaction), it follows the table as it grows, at the price of one plan per that many executions:
 * a stale plan costs in proportion to its use, and so does this.
 */
export const REPLAN_AFTER_EXECUTIONS = 250;

/**
 * pg's Client with a client-side query deadline that ends the connection: a server that stopped
 * answering (hung, partitioned) would otherwise keep the query, and every query queued behind it on
 * that connection (a transaction's ROLLBACK), waiting for as long as the TCP connection lives.
 * Closing it fails them all at once and the pool replaces the connection.
 */
export class DeadlineClient extends pg.Client {
  queryDeadlineMs: number;
  preparedStatements: boolean;
  /** How many times each named statement ran since it was (last) prepared on this connection. */
  readonly executions = new Map<string, number>();

  constructor(config?: Pg.ClientConfig & ClientDeadline) {
    super(config);
    this.queryDeadlineMs = config?.queryDeadlineMs ?? 0;
    this.preparedStatements = config?.preparedStatements ?? true;
    // The pool and TypeORM listen too; this only keeps an error nobody else hears from being fatal.
    // (The embedded engine names itself at startup, EMBEDDED_PARAMETER; its wire server keeps each
    // connection's statement names apart, so named statements are sent there as to a server.)
    this.on('error', () => undefined);
  }
}

type Query = typeof pg.Client.prototype.query;
// pg's own query is looked up at each call (not captured at load), so instrumentation that wraps
// `pg.Client.prototype.query` later (a profiler, the benchmarks' statement counter) still sees every statement.
DeadlineClient.prototype.query = function deadlineQuery(this: DeadlineClient, ...args: unknown[]): unknown {
  const named = args[0] && typeof args[0] === 'object' && typeof (args[0] as { name?: unknown }).name === 'string' ? (args[0] as { name: string }).name : undefined;
  if (named && !this.preparedStatements) args[0] = { ...(args[0] as object), name: undefined };
  else if (named) replanWhenOld(this, named);
  let result = (pg.Client.prototype.query as (...a: unknown[]) => unknown).apply(this, args);
  if (named && this.preparedStatements && result instanceof Promise) result = result.catch((e: unknown) => forgetStale(this, named, e));
  const ms = this.queryDeadlineMs;
  const config = args[0] as { submit?: unknown } | undefined;
  if (!ms || typeof config?.submit === 'function' || !(result instanceof Promise)) return result;
  let timer: NodeJS.Timeout | undefined;
  return new Promise((resolve, reject) => {
    timer = setTimeout(() => {
      reject(new DatabaseTimeoutError(ms));
      (this as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    }, ms);
    result.then(resolve, reject);
  }).finally(() => clearTimeout(timer));
} as Query;

/** Forgets a statement run REPLAN_AFTER_EXECUTIONS times on its plan (outside a transaction), so this use prepares it again. */
function replanWhenOld(client: DeadlineClient, name: string): void {
  const internals = client as unknown as { connection?: { parsedStatements?: Record<string, string> }; _txStatus?: string | null };
  const runs = (client.executions.get(name) ?? 0) + 1;
  if (!internals.connection?.parsedStatements?.[name]) {
    client.executions.set(name, 1);
    return;
  }
  if (runs <= REPLAN_AFTER_EXECUTIONS || internals._txStatus !== 'I') {
    client.executions.set(name, runs);
    return;
  }
  delete internals.connection.parsedStatements[name];
  client.executions.set(name, 1);
  // Queued before the statement itself: it is parsed again right after.
  (pg.Client.prototype.query as (text: string) => Promise<unknown>).call(client, `DEALLOCATE "${name.replace(/"/g, '""')}"`).catch(() => undefined);
}

/**
 * A prepared statement whose result columns changed (another replica migrated the table) fails
 * once: it is deallocated here before the failure reaches the caller, so the caller's next query
 * finds the connection idle (nothing left queued behind its back, which pg 9 refuses) and its next
 * use prepares it again from the current schema. Inside a transaction the DEALLOCATE fails (the
 * transaction is aborted): the statement is then forgotten at its next use outside one, as an old
 * plan is (replanWhenOld), instead of being parsed again under a name the server still holds.
 */
function forgetStale(client: DeadlineClient, name: string, e: unknown): Promise<never> {
  if ((e as { code?: string })?.code !== '0A000' || !STALE_PLAN.test((e as Error).message ?? '')) return Promise.reject(e);
  const deallocate = (pg.Client.prototype.query as (text: string) => Promise<unknown>).call(client, `DEALLOCATE "${name.replace(/"/g, '""')}"`);
  return deallocate.then(
    () => {
      const parsed = (client as unknown as { connection?: { parsedStatements?: Record<string, string> } }).connection?.parsedStatements;
      if (parsed) delete parsed[name];
      client.executions.delete(name);
      throw e;
    },
    () => {
      client.executions.set(name, Number.POSITIVE_INFINITY);
      throw e;
    },
  );
}

/** pg's Pool whose connection failures (refused, timed out, server gone) are marked unavailable. */
export class UnavailableTaggingPool extends pg.Pool {}

UnavailableTaggingPool.prototype.connect = function taggedConnect(this: Pg.Pool, cb?: (err: Error | undefined, client?: Pg.PoolClient, done?: (release?: unknown) => void) => void): unknown {
  const connect = pg.Pool.prototype.connect;
  if (typeof cb === 'function') return (connect as (c: unknown) => unknown).call(this, (err: Error | undefined, client?: Pg.PoolClient, done?: (release?: unknown) => void) => cb(err ? tag(err) : err, client, done));
  return (connect as () => Promise<Pg.PoolClient>).call(this).catch((err: Error) => Promise.reject(tag(err)));
} as typeof pg.Pool.prototype.connect;

/** The `pg` module as TypeORM loads it, with the deadline client and the tagging pool. */
export const pgDriver = { ...pg, Pool: UnavailableTaggingPool, Client: DeadlineClient };
