import { DataSource } from 'typeorm';
import { ENTITIES } from '../../entities';
import { MIGRATIONS } from '../../../migrations';
import type { HostConfig } from '../config/host-config';
import { EmbeddedPostgres, startEmbeddedPostgres } from './embedded-postgres';

export interface DatabaseHandle {
  dataSource: DataSource;
  embedded?: EmbeddedPostgres;
  /** 'embedded' or the server's host (never the password). */
  describe: string;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  poolSize?: number;
  log?: (msg: string) => void;
}

/** Connects to DATABASE_URL, or starts (or joins) the embedded PostgreSQL under the data folder. */
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

export async function openDatabase(config: Pick<HostConfig, 'databaseUrl' | 'dataDir'>, options: DatabaseOptions = {}): Promise<DatabaseHandle> {
  const poolSize = options.poolSize ?? 10;
  let embedded: EmbeddedPostgres | undefined;
  let connection: Record<string, unknown>;
  let describe: string;
  if (config.databaseUrl) {
    connection = { url: config.databaseUrl };
    describe = describeDatabase(config);
  } else {
    embedded = await startEmbeddedPostgres(config.dataDir, { log: options.log, maxConnections: poolSize });
    connection = { host: embedded.socketDir, port: embedded.port, username: 'postgres', database: 'postgres' };
    describe = describeDatabase(config);
  }
  const dataSource = new DataSource({
    type: 'postgres',
    ...connection,
    entities: ENTITIES,
    migrations: [],
    synchronize: false,
    migrationsRun: false,
    installExtensions: false,
    uuidExtension: 'pgcrypto',
    logging: false,
    extra: { max: poolSize, connectionTimeoutMillis: 15_000 },
  });
  try {
    await dataSource.initialize();
  } catch (e) {
    await embedded?.close();
    throw e;
  }
  return {
    dataSource,
    embedded,
    describe,
    async close() {
      if (dataSource.isInitialized) await dataSource.destroy();
      await embedded?.close();
    },
  };
}

export { MIGRATIONS };
