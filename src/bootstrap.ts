import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import { LogController } from 'fastify';
import type { DestinationStream, Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { AppModule, HOST_SCHEMA } from './app.module';
import { HostConfig } from './platform/config/host-config';
import { describeDatabase, openDatabase, DatabaseHandle } from './platform/database/data-source.factory';
import { pendingMigrations, runMigrations } from './platform/database/migration-runner';
import { oneLineReason, StartupError } from './platform/errors/startup-error';
import { frameworkErrorOptions } from './platform/http/framework-errors';
import { installJsonGuard } from './platform/http/json-guard';
import { installSendTimeout } from './platform/http/send-timeout';
import { HealthService } from './platform/health/health.service';
import { createLogger, PinoNestLogger } from './platform/logging/logger';
import { installRequestLog } from './platform/logging/request-log';
import { buildOpenApiDocument } from './platform/openapi/openapi-document';
import { OpenApiHolder } from './platform/openapi/openapi.controller';
import { loadPlugins, PluginLoadResult } from './platform/plugins/plugin-loader';
import { PluginStateStore } from './platform/plugins/plugin-state.store';
import { SchemaRegistry } from './platform/schemas/schema-registry';
import { HOST_VERSION } from './platform/discovery/discovery.service';
import { installRequestTracing } from './platform/tracing/request-tracing';
import { startTracing } from './platform/tracing/tracing';

export interface HostOptions {
  /** Use this database instead of opening one from the config (tests). */
  dataSource?: DataSource;
  logDestination?: DestinationStream;
  /** Build the OpenAPI document and mount Swagger UI (default true). */
  openApi?: boolean;
  /** A one-shot command: join a host serving the embedded database instead of waiting to own its folder. */
  joinEmbedded?: boolean;
}

export interface Host {
  app: NestFastifyApplication;
  config: HostConfig;
  logger: Logger;
  db?: DatabaseHandle;
  dataSource: DataSource;
  plugins: PluginLoadResult;
  openApi: OpenApiHolder;
  close(): Promise<void>;
}

export { oneLineReason, StartupError };

async function phase<T>(name: StartupError['phase'], what: string, fn: () => Promise<T> | T): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof StartupError) throw e;
    throw new StartupError(name, `${what}: ${oneLineReason(e)}`, { cause: e });
  }
}

/**
 * Builds the host: database (migrated when configured), plugins, the Nest application on Fastify
 * with the advertised body limit, and the OpenAPI document. Does not listen.
 */
export async function createHost(config: HostConfig, options: HostOptions = {}): Promise<Host> {
  const logger = createLogger(config.logLevel, options.logDestination);
  // Before anything that may start a span; loads the OpenTelemetry SDK only when tracing is on.
  const tracing = await phase('application', 'cannot start tracing', () => startTracing(config.tracing, { serviceVersion: HOST_VERSION, instanceId: config.instanceId }));
  if (tracing) logger.info({ msg: 'OpenTelemetry tracing on', protocol: config.tracing.protocol, endpoint: config.tracing.url ?? 'default', service: config.tracing.serviceName, because: config.tracing.reason });
  if (config.testSeams) {
    // Loud on purpose: the seams act on live data (register webhooks, purge a tenant's event log, race effects).
    logger.warn({ msg: 'WARNING: TEST SEAMS ARE ENABLED (OPENWOP_TEST_SEAMS=true): the /v1/host/sample/* conformance seams are served; they must never be on in production', setting: 'OPENWOP_TEST_SEAMS' });
  }
  let db: DatabaseHandle | undefined;
  let dataSource = options.dataSource;
  if (!dataSource) {
    db = await phase('database', `cannot open the database ${describeDatabase(config)}`, () => openDatabase(config, HOST_SCHEMA, { log: logger, joinEmbedded: options.joinEmbedded }));
    dataSource = db.dataSource;
  }
  try {
    const ds = dataSource;
    await phase('migrations', 'cannot apply the database migrations', async () => {
      if (config.migrateOnStart) {
        const applied = await runMigrations(ds, HOST_SCHEMA.migrations);
        if (applied.length) logger.info({ msg: 'migrations applied', applied });
      } else {
        const pending = await pendingMigrations(ds, HOST_SCHEMA.migrations);
        if (pending.length) logger.warn({ msg: 'migrations pending: run `openwop-host migrate`', pending });
      }
    });
    const pluginState = new PluginStateStore();
    pluginState.bind(dataSource);
    const plugins = await phase('plugins', 'cannot load the plugins', () => loadPlugins(config, { logger, schemas: SchemaRegistry.shared(), state: pluginState }));
    const openApi = new OpenApiHolder();
    const adapter = new FastifyAdapter({
      bodyLimit: config.maxRequestBodyBytes,
      loggerInstance: logger,
      genReqId: (req: { headers: Record<string, string | string[] | undefined> }) => {
        const given = req.headers['x-request-id'];
        return typeof given === 'string' && /^[A-Za-z0-9._-]{1,128}$/.test(given) ? given : randomUUID();
      },
      trustProxy: config.trustProxy,
      // Bad URLs, over-long path parameters and requests Node's parser refuses answer the envelope too.
      ...frameworkErrorOptions(),
      // Fastify's own request lines carry neither the principal nor the route; installRequestLog writes one line instead.
      logController: new LogController({ disableRequestLogging: true }),
      // Deadlines against slow or stuck clients (checked every second, not Node's default 30 s).
      keepAliveTimeout: config.http.keepAliveTimeoutMs,
      requestTimeout: config.http.requestTimeoutMs,
      http: { headersTimeout: config.http.headersTimeoutMs, requestTimeout: config.http.requestTimeoutMs, connectionsCheckingInterval: 1000 },
    } as ConstructorParameters<typeof FastifyAdapter>[0]);
    installSendTimeout(adapter.getInstance().server as import('node:http').Server, config.http.sendTimeoutMs);
    // The one JSON parser of the host (Nest's own is off): depth, size and text guard before any handler.
    installJsonGuard(adapter.getInstance(), config.json);
    installRequestLog(adapter.getInstance());
    installRequestTracing(adapter.getInstance());
    let created: NestFastifyApplication | undefined;
    const app = await phase('application', 'cannot start the application', async () => {
      try {
        created = await NestFactory.create<NestFastifyApplication>(
          AppModule.forRoot({ config, dataSource: ds, pluginState, openApi, plugins: plugins.loaded }),
          adapter,
          { logger: new PinoNestLogger(logger), abortOnError: false, bufferLogs: false, bodyParser: false },
        );
        const a = created;
        a.enableShutdownHooks();
        const health = a.get(HealthService);
        for (const f of plugins.failed) health.report(`plugin:${f.id ?? f.specifier}`, false, f.reason);
        if (options.openApi !== false) {
          const doc = buildOpenApiDocument(a, { testSeams: config.testSeams });
          openApi.set(doc);
          SwaggerModule.setup('docs', a, doc as never, { jsonDocumentUrl: '/docs/openapi.json', raw: false });
        }
        await a.init();
        await a.getHttpAdapter().getInstance().ready();
        return a;
      } catch (e) {
        await created?.close().catch(() => undefined);
        throw e;
      }
    });
    return {
      app,
      config,
      logger,
      db,
      dataSource,
      plugins,
      openApi,
      async close() {
        await app.close();
        await db?.close();
        // Last: the spans of the shutdown itself are exported too.
        await tracing?.shutdown().catch((e: unknown) => logger.warn({ msg: 'tracing: the last spans could not be exported', err: (e as Error).message }));
      },
    };
  } catch (e) {
    await db?.close();
    await tracing?.shutdown().catch(() => undefined);
    throw e;
  }
}
