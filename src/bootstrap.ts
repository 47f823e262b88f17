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
import type { PrestartedEmbedded } from './platform/database/embedded-start';
import { pendingMigrations, runMigrations } from './platform/database/migration-runner';
import { oneLineReason, StartupError } from './platform/errors/startup-error';
import { frameworkErrorOptions } from './platform/http/framework-errors';
import { installJsonGuard } from './platform/http/json-guard';
import { installSamlFormParser } from './platform/identity/saml/saml-form';
import { installProtocolNegotiation, protocolRoutingOptions, type RunOwnerSource } from './platform/http/protocol-negotiation';
import { RunRecordsPort } from './platform/run-ports/run-records';
import { installSendTimeout } from './platform/http/send-timeout';
import { installCloseGrace } from './platform/http/close-grace';
import { HealthService } from './platform/health/health.service';
import { createLogger, PinoNestLogger } from './platform/logging/logger';
import { installRequestLog } from './platform/logging/request-log';
import { buildOpenApiDocument } from './platform/openapi/openapi-document';
import { OpenApiHolder } from './platform/openapi/openapi-holder';
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
  /** The embedded engine, started before this host's modules loaded (`serve`); its lines go to this host's logger. */
  embedded?: PrestartedEmbedded;
}

export interface Host {
  app: NestFastifyApplication;
  config: HostConfig;
  logger: Logger;
  db?: DatabaseHandle;
  dataSource: DataSource;
  plugins: PluginLoadResult;
  openApi: OpenApiHolder;
  /**
   * Closes the host, once (every caller gets the same promise): the application (whose first
   * shutdown hook is the run engine's: it stops claiming, stops its executions and hands their
   * leases back), then the database, then tracing. The database closes even if the application's
   * close failed.
   */
  close(): Promise<void>;
  /**
   * Makes the process stop on SIGTERM, SIGINT, SIGHUP and SIGQUIT, and on a fatal error (an
   * uncaught exception or unhandled rejection): `close()`, then exit 0 (1 after a fatal error, a
   * failed close, or a close that outlasts `forceAfterMs`).
   */
  exitOnStop(opts?: { forceAfterMs?: number }): void;
}

/** The signals that stop a host process (those a supervisor, a container runtime or a terminal sends). */
export const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'] as const;

export { oneLineReason, StartupError };

async function phase<T>(name: StartupError['phase'], what: string, fn: () => Promise<T> | T, took?: Record<string, number>): Promise<T> {
  const started = Date.now();
  try {
    const result = await fn();
    // What each phase of the boot took, for the `boot phases` line (`npm run bench -- embedded` reads it).
    if (took) took[name] = (took[name] ?? 0) + Date.now() - started;
    return result;
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
  const took: Record<string, number> = {};
  let db: DatabaseHandle | undefined;
  let dataSource = options.dataSource;
  if (!dataSource) {
    options.embedded?.attach(logger);
    db = await phase('database', `cannot open the database ${describeDatabase(config)}`, () => openDatabase(config, HOST_SCHEMA, { log: logger, joinEmbedded: options.joinEmbedded, embedded: options.embedded?.engine }), took);
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
    }, took);
    const pluginState = new PluginStateStore();
    pluginState.bind(dataSource);
    const plugins = await phase('plugins', 'cannot load the plugins', () => loadPlugins(config, { logger, schemas: SchemaRegistry.shared(), state: pluginState }), took);
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
      // Each request's protocol major, decided before routing (both majors run the same handlers).
      ...protocolRoutingOptions(config.protocol),
      // Fastify's own request lines carry neither the principal nor the route; installRequestLog writes one line instead.
      logController: new LogController({ disableRequestLogging: true }),
      // Deadlines against slow or stuck clients (checked every second, not Node's default 30 s).
      keepAliveTimeout: config.http.keepAliveTimeoutMs,
      requestTimeout: config.http.requestTimeoutMs,
      http: { headersTimeout: config.http.headersTimeoutMs, requestTimeout: config.http.requestTimeoutMs, connectionsCheckingInterval: 1000 },
    } as ConstructorParameters<typeof FastifyAdapter>[0]);
    installSendTimeout(adapter.getInstance().server as import('node:http').Server, config.http.sendTimeoutMs);
    // A closing host lets requests in flight finish, then drops what stays open (event streams).
    installCloseGrace(adapter.getInstance());
    // The one JSON parser of the host (Nest's own is off): depth, size and text guard before any handler.
    installJsonGuard(adapter.getInstance(), config.json);
    // The one form body the host accepts: a SAML response posted to the assertion consumer service.
    installSamlFormParser(adapter.getInstance());
    installRequestLog(adapter.getInstance());
    // Major-2 run answers render each run's owner subject from the runs capability's records (set below).
    const runOwners: RunOwnerSource = {};
    installProtocolNegotiation(adapter.getInstance(), runOwners);
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
        runOwners.current = a.get(RunRecordsPort, { strict: false });
        // No a.enableShutdownHooks(): its signal handlers ran the shutdown hooks a second time, beside
        // the process's own close (exitOnStop), and that close went on to close the database while
        // the run engine's lease handback was still in flight. Signals are exitOnStop's.
        const health = a.get(HealthService);
        for (const f of plugins.failed) health.report(`plugin:${f.id ?? f.specifier}`, false, f.reason);
        if (options.openApi !== false) {
          // Built on first read (OpenApiHolder), from the routes as mounted then.
          openApi.setFactory(() => buildOpenApiDocument(a, { testSeams: config.testSeams }));
          SwaggerModule.setup('docs', a, () => openApi.document as never, { jsonDocumentUrl: '/docs/openapi.json', raw: false });
        }
        await a.init();
        await a.getHttpAdapter().getInstance().ready();
        return a;
      } catch (e) {
        await created?.close().catch(() => undefined);
        throw e;
      }
    }, took);
    logger.info({ msg: 'boot phases', ms: took, sinceProcessStart: Math.round(process.uptime() * 1000) });
    let closing: Promise<void> | undefined;
    const close = (): Promise<void> =>
      (closing ??= (async () => {
        try {
          await app.close();
        } finally {
          await db?.close();
          // Last: the spans of the shutdown itself are exported too.
          await tracing?.shutdown().catch((e: unknown) => logger.warn({ msg: 'tracing: the last spans could not be exported', err: (e as Error).message }));
        }
      })());
    return { app, config, logger, db, dataSource, plugins, openApi, close, exitOnStop: (opts) => exitOnStop(logger, close, opts?.forceAfterMs ?? 15_000) };
  } catch (e) {
    await db?.close();
    await tracing?.shutdown().catch(() => undefined);
    throw e;
  }
}

/** See Host.exitOnStop: one stop per process, whatever asks first; a second signal changes nothing. */
function exitOnStop(logger: Logger, close: () => Promise<void>, forceAfterMs: number): void {
  let stopping = false;
  const stop = (reason: string, code: number) => {
    if (stopping) return;
    stopping = true;
    logger.info({ msg: 'shutting down', signal: reason });
    const force = setTimeout(() => {
      logger.error({ msg: 'the shutdown did not finish in time; exiting', forceAfterMs });
      process.exit(1);
    }, forceAfterMs);
    force.unref();
    close().then(
      () => process.exit(code),
      (e: unknown) => {
        logger.error({ msg: 'the shutdown failed', err: oneLineReason(e) });
        process.exit(1);
      },
    );
  };
  for (const signal of STOP_SIGNALS) process.on(signal, () => stop(signal, 0));
  const fatal = (e: unknown) => {
    logger.fatal({ msg: 'fatal error: the host stops', err: (e as Error)?.message ?? String(e), stack: (e as Error)?.stack });
    stop('fatal-error', 1);
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);
}
