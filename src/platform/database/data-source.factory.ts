import { DataSource } from 'typeorm';
import type { DatabaseConfig, HostConfig } from '../config/host-config';
import { DatabaseSchema, declareSchema } from './database-schema';
import type * as pg from 'pg';
import { pgDriver } from './database-driver';
import { usePreparedPool } from './prepared-statement';
import type { EmbeddedLog, EmbeddedPostgres } from './embedded-postgres';
import { startHostEmbedded } from './embedded-start';

export interface DatabaseHandle {
  dataSource: DataSource;
  embedded?: EmbeddedPostgres;
  /** 'embedded' or the server's host (never the password). */
  describe: string;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  poolSize?: number;
  log?: EmbeddedLog;
  /** A one-shot command: join a host that serves the embedded database instead of waiting for its folder. */
  joinEmbedded?: boolean;
  /** The embedded engine, already starting (serve starts it before loading the host: see embedded-start.ts). */
  embedded?: Promise<EmbeddedPostgres>;
}

/** The pool and timeouts used when the configuration leaves them out (a caller with a partial config). */
export const DEFAULT_DATABASE_CONFIG: DatabaseConfig = { poolSize: 10, connectTimeoutMs: 5000, statementTimeoutMs: 15000, lockTimeoutMs: 10000, idleInTransactionTimeoutMs: 60000, preparedStatements: true };

/** Where the database is, for messages: host, port and database name, never the credentials in the URL. */
export function describeDatabase(config: Pick<HostConfig, 'databaseUrl' | 'dataDir'>): string {
  if (!config.databaseUrl) return `embedded (${config.dataDir})`;
  try {
    const u = new URL(config.databaseUrl);
    return `${u.hostname}:${u.port || 5432}${u.pathname}`;
  } catch {
    return '(unparseable DATABASE_URL)';
  }
}

/**
 * The connections of the hot prepared statements (the engine's writes, claims and renewals, run
 * creation's insert, the event followers' reads; see prepared-statement.ts): written for one generic
 * plan whatever their values, they run on sessions that plan every prepared statement generically
 * (PostgreSQL would otherwise plan the engine's write again at every call, half of its database
 * time, having found per-call plans no worse). That setting also governs the unnamed statements of
 * a session, which need per-call plans (the goal scheduler's claim lost a quarter of its rate under
 * generic ones), hence sessions of their own: half as many as the general pool, at least two. A
 * `options` in DATABASE_URL takes precedence.
 *
 * These sessions also plan without sequential scans: a generic plan lives as long as its session
 * until the table's statistics change, and one made while a table was nearly empty (a fresh
 * install, a truncate) scanned the whole run table at every engine write and claim for as long as
 * it lived, where every one of these statements reaches its rows through an index.
 */
function openPreparedPool(url: string, poolSize: number, extra: Record<string, unknown>): pg.Pool {
  // The general pool's settings (timeouts, deadline, client), with fewer connections and generic plans.
  const pool = new pgDriver.Pool({ ...extra, connectionString: url, max: Math.max(2, Math.ceil(poolSize / 2)), options: '-c plan_cache_mode=force_generic_plan -c enable_seqscan=off' } as pg.PoolConfig);
  // An idle connection that breaks is dropped by the pool; the next statement opens another.
  pool.on('error', () => undefined);
  return pool;
}

/** A line on stderr for a process without a structured logger (the CLI). */
const stderrLog: EmbeddedLog = {
  info: () => undefined,
  warn: ({ msg }) => process.stderr.write(`${msg}\n`),
  error: ({ msg, ...facts }) => process.stderr.write(`${msg} ${JSON.stringify(facts)}\n`),
};

/**
 * Connects to DATABASE_URL, or starts (or, for a one-shot command, joins) the embedded PostgreSQL
 * under the data folder. Every connection carries the configured timeouts: on a server as session
 * settings (statement, lock and idle-in-transaction timeouts) plus a client-side deadline a little
 * past the statement timeout, for a server that stopped answering altogether. `schema` (the entities
 * and migrations, composed by the application root) is what the data source maps and readiness checks.
 */
export async function openDatabase(
  config: Pick<HostConfig, 'databaseUrl' | 'dataDir'> & Partial<Pick<HostConfig, 'database' | 'embedded'>>,
  schema: DatabaseSchema,
  options: DatabaseOptions = {},
): Promise<DatabaseHandle> {
  const db: DatabaseConfig = config.database ?? DEFAULT_DATABASE_CONFIG;
  const poolSize = options.poolSize ?? db.poolSize;
  let embedded: EmbeddedPostgres | undefined;
  let connection: Record<string, unknown>;
  const extra: Record<string, unknown> = {
    max: poolSize,
    connectionTimeoutMillis: db.connectTimeoutMs,
    Client: pgDriver.Client,
    queryDeadlineMs: db.statementTimeoutMs ? db.statementTimeoutMs + 250 : 0,
    // On the embedded engine too: its connections share one backend session, and its wire server
    // gives each connection's statement names a prefix of its own there (embedded-statement-names.ts).
    preparedStatements: db.preparedStatements ?? true,
  };
  if (config.databaseUrl) {
    connection = { url: config.databaseUrl };
    // Sent in the startup packet: the server enforces them for every statement of the session.
    if (db.statementTimeoutMs) extra.statement_timeout = db.statementTimeoutMs;
    if (db.lockTimeoutMs) extra.lock_timeout = db.lockTimeoutMs;
    if (db.idleInTransactionTimeoutMs) extra.idle_in_transaction_session_timeout = db.idleInTransactionTimeoutMs;
  } else {
    embedded = await (options.embedded ?? startHostEmbedded({ ...config, database: db }, { poolSize, log: options.log ?? stderrLog, join: options.joinEmbedded }));
    connection = { host: embedded.socketDir, port: embedded.port, username: 'postgres', database: 'postgres' };
    // The owner's own connections skip the socket (see EmbeddedWireServer.connectInProcess).
    const server = embedded.server;
    if (server) extra.stream = () => server.connectInProcess();
  }
  const dataSource = new DataSource({
    type: 'postgres',
    driver: pgDriver,
    ...connection,
    entities: [...schema.entities],
    migrations: [],
    synchronize: false,
    migrationsRun: false,
    installExtensions: false,
    uuidExtension: 'pgcrypto',
    logging: false,
    extra,
  });
  declareSchema(dataSource, schema);
  try {
    await dataSource.initialize();
  } catch (e) {
    await embedded?.close();
    throw e;
  }
  const preparedPool = config.databaseUrl && extra.preparedStatements ? openPreparedPool(config.databaseUrl, poolSize, extra) : undefined;
  if (preparedPool) usePreparedPool(dataSource, preparedPool);
  return {
    dataSource,
    embedded,
    describe: describeDatabase(config),
    async close() {
      await preparedPool?.end().catch(() => undefined);
      if (dataSource.isInitialized) await dataSource.destroy();
      await embedded?.close();
    },
  };
}
