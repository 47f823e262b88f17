import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import createClient, { Client } from 'openapi-fetch';
import { Client as PgClient } from 'pg';
import type { DataSource } from 'typeorm';
import { createHost, Host } from '../../src/bootstrap';
import { HostConfig, loadHostConfig } from '../../src/platform/config/host-config';
import { ApiKeyService } from '../../src/platform/identity/api-key.service';
import type { paths } from '../../generated/openapi';
import { takePooledDatabase } from './database-pool';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempFolders } from './temp-dirs';

export interface TestAppOptions {
  /** Environment variables for the host (merged over test defaults). */
  env?: Record<string, string>;
  /** Written to a temporary file and passed as OPENWOP_CONFIG. */
  configFile?: Record<string, unknown>;
  /** Join an existing test database (a second host instance on the same data) instead of creating one. */
  database?: string;
  /** The PostgreSQL server to create the fresh database on (default: the test server, DATABASE_URL). */
  adminUrl?: string;
  /**
   * false: the host has no OpenAPI document (`/v1/openapi.json` then answers `{}` and `/docs` is not
   * mounted). The host now builds the document on its first read, so this saves only the /docs setup.
   */
  openApi?: false;
}

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

export interface KeyOptions {
  tenant?: string;
  workspace?: string;
  principal?: string;
  scopes?: string[];
  roles?: string[];
  expiresAt?: Date;
}

export interface TestApp {
  host: Host;
  app: NestFastifyApplication;
  moduleRef: NestFastifyApplication;
  ds: DataSource;
  config: HostConfig;
  databaseName: string;
  /** Every log line the host wrote (JSON text). */
  logs: string[];
  key(opts?: KeyOptions): Promise<string>;
  http(method: string, url: string, opts?: { token?: string; body?: unknown; headers?: Record<string, string>; rawBody?: string | Buffer }): Promise<HttpResult>;
  api(token?: string): Client<paths>;
  /** Stops the host and removes its folders, keeping its database for a later app (`database`) to take over. */
  stop(): Promise<void>;
  /** Stops the host, drops its database (unless the test named it) and removes its folders. */
  close(): Promise<void>;
}

function adminUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: run the tests through jest (jest.config.js picks the database)');
  return url;
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

async function adminOn<T>(fn: (c: PgClient) => Promise<T>, url: string): Promise<T> {
  const c = new PgClient({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Boots the real host (Nest on Fastify) against a fresh, migrated PostgreSQL database. */
export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const server = options.adminUrl ?? adminUrl();
  const embedded = () => !options.adminUrl && process.env.OPENWOP_TEST_DB_MODE === 'embedded';
  const admin = <T>(fn: (c: PgClient) => Promise<T>) => adminOn(fn, server);
  // The folders made here for the host (its data folder unless the test names one, its config file's) go when it closes.
  const scratch = tempFolders();
  let configPath: string | undefined;
  if (options.configFile) {
    configPath = path.join(scratch.make('openwop-cfg-'), 'config.json');
    fs.writeFileSync(configPath, JSON.stringify(options.configFile));
  }
  let databaseName = options.database ?? `owt_${randomBytes(6).toString('hex')}`;
  const owned = !options.database;
  if (embedded()) databaseName = 'postgres';
  const env: Record<string, string> = {
    LOG_LEVEL: 'info',
    OPENWOP_SCHEDULER_ENABLED: 'false',
    OPENWOP_BOOTSTRAP_KEY: 'false',
    ...(options.env?.OPENWOP_DATA_DIR === undefined ? { OPENWOP_DATA_DIR: scratch.make('openwop-data-') } : {}),
    ...options.env,
    DATABASE_URL: embedded() ? server : withDatabase(server, databaseName),
  };
  if (configPath) env.OPENWOP_CONFIG = configPath;
  // Configuration errors surface before any database exists, so a failing test leaves nothing behind.
  let config: HostConfig;
  try {
    config = loadHostConfig(env);
  } catch (e) {
    scratch.removeAll();
    throw e;
  }
  if (embedded()) {
    if (owned) {
      await admin(async (c) => {
        await c.query('DROP SCHEMA IF EXISTS public CASCADE');
        await c.query('CREATE SCHEMA public');
      });
    }
  } else if (owned) {
    // A copy of the run's migrated template when the host would apply the migrations itself anyway.
    const template = !options.adminUrl && config.migrateOnStart ? process.env.OPENWOP_TEST_TEMPLATE_DB : undefined;
    await admin(async (c) => {
      // A copy the run's database pool made ahead (database-pool.ts), else one made here.
      if (template && process.env.OPENWOP_TEST_DB_DROP_QUEUE && (await takePooledDatabase(c, template, databaseName))) return;
      await c.query(`CREATE DATABASE "${databaseName}"${template ? ` TEMPLATE "${template}"` : ''}`);
    });
  }
  const dropDatabase = async () => {
    if (!owned || embedded()) return;
    // The run's database pool drops it off the test's path (a drop forces a checkpoint: seconds on a busy machine).
    const queue = !options.adminUrl ? process.env.OPENWOP_TEST_DB_DROP_QUEUE : undefined;
    if (queue) fs.appendFileSync(queue, `${databaseName}\n`);
    else await admin((c) => c.query(`DROP DATABASE IF EXISTS "${databaseName}" WITH (FORCE)`));
  };
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  let host: Host;
  try {
    host = await createHost(config, { logDestination: sink, ...(options.openApi === false ? { openApi: false } : {}) });
  } catch (e) {
    await dropDatabase().catch(() => undefined);
    scratch.removeAll();
    throw e;
  }
  const app = host.app;
  const stop = async () => {
    await host.close();
    scratch.removeAll();
  };

  const http: TestApp['http'] = async (method, url, opts = {}) => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let payload: string | Buffer | undefined;
    if (opts.rawBody !== undefined) payload = opts.rawBody;
    else if (opts.body !== undefined) {
      payload = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await app.inject({ method: method as never, url, headers, payload });
    let body: unknown = undefined;
    if (res.body) {
      try {
        body = JSON.parse(res.body);
      } catch {
        body = res.body;
      }
    }
    return { status: res.statusCode, headers: res.headers as HttpResult['headers'], body, text: res.body };
  };

  /** openapi-fetch over Fastify inject: the generated client drives the real pipeline without a port. */
  const injectFetch = async (input: Request): Promise<Response> => {
    const u = new URL(input.url);
    const headers: Record<string, string> = {};
    input.headers.forEach((v, k) => (headers[k] = v));
    const body = input.body ? Buffer.from(await input.arrayBuffer()) : undefined;
    const res = await app.inject({ method: input.method as never, url: `${u.pathname}${u.search}`, headers, payload: body });
    const outHeaders = new Headers();
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) outHeaders.set(k, Array.isArray(v) ? v.join(', ') : String(v));
    const nullBody = [204, 304].includes(res.statusCode);
    return new Response(nullBody ? null : res.rawPayload, { status: res.statusCode, headers: outHeaders });
  };

  return {
    host,
    app,
    moduleRef: app,
    ds: host.dataSource,
    config,
    databaseName,
    logs,
    async key(o = {}) {
      const { key } = await app.get(ApiKeyService).create({
        tenant: o.tenant ?? 'default',
        workspace: o.workspace,
        principal: o.principal ?? 'tester',
        scopes: o.scopes ?? (o.roles ? [] : ['runs:read']),
        roles: o.roles,
        expiresAt: o.expiresAt,
      });
      return key;
    },
    http,
    api(token?: string) {
      return createClient<paths>({
        baseUrl: 'http://openwop.test',
        fetch: injectFetch,
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });
    },
    stop,
    async close() {
      await stop();
      await dropDatabase();
    },
  };
}
