import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { ConsoleLogger, Logger, type LogLevel } from '@nestjs/common';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { consoleBuilt } from '../console/console-assets';
import { HOST_SCHEMA } from '../app.module';
import { createHost, Host, oneLineReason, StartupError } from '../bootstrap';
import { PROJECT_ROOT } from '../platform/project-root';
import { HostConfig, loadHostConfig } from '../platform/config/host-config';
import { openDatabase } from '../platform/database/data-source.factory';
import { migrationStatus, pendingMigrations, runMigrations } from '../platform/database/migration-runner';
import { ApiKeyService } from '../platform/identity/api-key.service';
import type * as PortabilityCli from '../capabilities/portability/portability.cli';
import type { Prestarted } from './serve-prestart';
import { GrpcListener } from '../transport/grpc/grpc-listener';

/**
 * The commands that run the host or open its database. `src/cli.ts` loads this module only when one
 * of them is invoked, so `--help`, an argument error or a client command never loads Nest, TypeORM or
 * the application module.
 */

function config(): HostConfig {
  return loadHostConfig(process.env);
}

type DatabaseHandle = Awaited<ReturnType<typeof openDatabase>>;

/** Nest's console logger on stderr: a command's stdout carries its output alone (`keys create --json | jq`). */
class StderrLogger extends ConsoleLogger {
  protected override printMessages(messages: unknown[], context?: string, logLevel?: LogLevel, _stream?: 'stdout' | 'stderr', errorStack?: unknown): void {
    super.printMessages(messages, context, logLevel, 'stderr', errorStack);
  }
}

/** Opens the database the host uses (joining a running embedded host through its socket). */
async function withDatabase<T>(fn: (h: DatabaseHandle, cfg: HostConfig) => Promise<T>): Promise<T> {
  // What the services a command builds without Nest log (the audit log's key warning, say) is not its output.
  Logger.overrideLogger(new StderrLogger());
  const cfg = config();
  const handle = await openDatabase(cfg, HOST_SCHEMA, { poolSize: 2, joinEmbedded: true });
  try {
    return await fn(handle, cfg);
  } finally {
    await handle.close();
  }
}

function keyService(h: DatabaseHandle, cfg: HostConfig): ApiKeyService {
  return new ApiKeyService(h.dataSource, cfg);
}

/**
 * The console is built on install (`prepare`); a clone installed with --ignore-scripts, or sources
 * changed since (a pull), are built here before listening. A no-op when the build is current.
 */
function buildConsoleIfStale(cfg: HostConfig): void {
  if (!cfg.consoleEnabled) return;
  const script = path.join(PROJECT_ROOT, 'bin', 'build-console.js');
  // The check itself runs here (hashing the sources takes milliseconds); a process is started only to build.
  if ((require(script) as { consoleCurrent(): boolean }).consoleCurrent()) return;
  const r = spawnSync(process.execPath, [script, '--if-stale'], { stdio: 'inherit' });
  if (r.status !== 0) process.stderr.write(`console: the build failed; the host starts ${consoleBuilt() ? 'with the previous build' : 'without it'}\n`);
}

/**
 * Opens the database for a command that reads or writes its tables (keys). A fresh database (say, a
 * new embedded data folder before the first `serve`) is migrated first when OPENWOP_MIGRATE_ON_START
 * allows it, exactly as `serve` would; otherwise the command stops and names the command to run.
 */
async function withMigratedDatabase<T>(fn: (h: DatabaseHandle, cfg: HostConfig) => Promise<T>): Promise<T> {
  return withDatabase(async (h, cfg) => {
    const pending = await pendingMigrations(h.dataSource, HOST_SCHEMA.migrations);
    if (pending.length) {
      if (!cfg.migrateOnStart) {
        throw new Error(`the database has ${pending.length} pending migration(s); run \`openwop-host migrate\` first (OPENWOP_MIGRATE_ON_START is false)`);
      }
      const applied = await runMigrations(h.dataSource, HOST_SCHEMA.migrations);
      process.stderr.write(`applied ${applied.length} pending migration(s) first\n`);
    }
    return fn(h, cfg);
  });
}

/** `serve`, given what serve-prestart.ts began before this module loaded: the settings, and the embedded engine starting. */
export async function serve(pre: Prestarted = { config: config() }): Promise<void> {
  const cfg = pre.config;
  buildConsoleIfStale(cfg);
  const host = await createHost(cfg, { embedded: pre.embedded });
  // SIGTERM, SIGINT, SIGHUP, SIGQUIT or a fatal error: the host closes (the run engine hands its
  // leases back before the database closes), then the process exits.
  host.exitOnStop();
  const log = host.logger;
  const keys = host.app.get(ApiKeyService);
  try {
    await host.app.listen({ port: cfg.port, host: cfg.host });
  } catch (e) {
    await host.close().catch(() => undefined);
    const code = (e as { code?: string }).code;
    const where = `${cfg.host}:${cfg.port}`;
    const reason = code === 'EADDRINUSE' ? 'the address is already in use' : code === 'EACCES' ? 'permission denied' : oneLineReason(e);
    throw new StartupError('listen', `cannot listen on ${where}: ${reason}`, { cause: e });
  }
  const address = host.app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : cfg.port;
  const base = `http://${cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host}:${port}`;
  log.info({ msg: 'openwop host listening', url: base, database: host.db?.describe ?? 'external', plugins: host.plugins.loaded.map((p) => p.id) });
  await startGrpc(host, cfg);
  if (cfg.bootstrapKey && (await keys.count()) === 0) {
    // The operator's first key: every scope of tenant "default" (admin) and the host-wide metrics (monitor).
    const { key } = await keys.create({ tenant: 'default', principal: 'admin', roles: ['admin', 'monitor'], name: 'bootstrap' });
    process.stdout.write(
      [
        '',
        'No API key existed, so an admin key for tenant "default" was created (roles admin and monitor). It is shown only this once:',
        '',
        `  ${key}`,
        '',
        'Try it:',
        `  curl -s ${base}/.well-known/openwop`,
        `  curl -s -H "Authorization: Bearer ${key}" ${base}/v1/tools`,
        ...(cfg.metrics === 'scope' ? [`  curl -s -H "Authorization: Bearer ${key}" ${base}/metrics`] : []),
        '',
        `Manage keys with: npx openwop-host keys create --tenant default --principal me --role admin`,
        `API reference: ${base}/docs`,
        `Operator console: ${base}/console/ (sign in with the key above)`,
        '',
      ].join('\n'),
    );
  }
}

export function migrateUp(): Promise<void> {
  return withDatabase(async (h) => {
    const applied = await runMigrations(h.dataSource, HOST_SCHEMA.migrations);
    process.stdout.write(applied.length ? `applied:\n${applied.map((a) => `  ${a}`).join('\n')}\n` : 'nothing to apply\n');
  });
}

export function migrateStatus(opts: { json?: boolean }): Promise<void> {
  return withDatabase(async (h) => {
    const status = await migrationStatus(h.dataSource, HOST_SCHEMA.migrations);
    if (opts.json) process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
    else for (const s of status) process.stdout.write(`${s.applied ? 'applied ' : 'pending '} ${s.name}${s.appliedAt ? `  (${s.appliedAt})` : ''}\n`);
  });
}

export function migrateDiff(): Promise<void> {
  return withDatabase(async (h) => {
    await runMigrations(h.dataSource, HOST_SCHEMA.migrations);
    const log = await h.dataSource.driver.createSchemaBuilder().log();
    if (!log.upQueries.length) process.stdout.write('-- entities and migrations agree\n');
    for (const q of log.upQueries) process.stdout.write(`${q.query.replace(/uuid_generate_v4\(\)/g, 'gen_random_uuid()')};\n`);
  });
}

export interface KeyCreateOptions {
  tenant: string;
  workspace?: string;
  principal: string;
  scopes?: string[];
  role?: string;
  expires?: Date;
  name?: string;
  json?: boolean;
}

export function keysCreate(opts: KeyCreateOptions): Promise<void> {
  return withMigratedDatabase(async (h, cfg) => {
    const { key, view } = await keyService(h, cfg).create({
      tenant: opts.tenant,
      workspace: opts.workspace,
      principal: opts.principal,
      scopes: opts.scopes,
      roles: opts.role ? [opts.role] : [],
      expiresAt: opts.expires,
      name: opts.name,
    });
    if (opts.json) process.stdout.write(`${JSON.stringify({ key, id: view.id })}\n`);
    else process.stdout.write(`${key}\n\nid ${view.id} · tenant ${view.tenant} · principal ${view.principal} · scopes ${[...view.scopes, ...view.roles.map((r) => `role:${r}`)].join(' ')}\nThe key is shown only once.\n`);
  });
}

export function keysList(opts: { tenant: string; json?: boolean }): Promise<void> {
  return withMigratedDatabase(async (h, cfg) => {
    const list = await keyService(h, cfg).list(opts.tenant);
    if (opts.json) process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
    else
      for (const k of list) {
        // A rotated key still in its overlap is `rotated` (its successor is the key to hand out).
        const state = k.revokedAt ? 'revoked' : k.expiresAt && new Date(k.expiresAt) < new Date() ? 'expired' : k.rotatedTo ? 'rotated' : 'active';
        process.stdout.write(`${k.id}  ${k.prefix}…  ${state.padEnd(7)}  ${k.principal}  ${[...k.scopes, ...k.roles.map((r) => `role:${r}`)].join(',')}\n`);
      }
  });
}

export function keysRevoke(id: string): Promise<void> {
  return withMigratedDatabase(async (h, cfg) => {
    const k = await keyService(h, cfg).revoke(id);
    process.stdout.write(`revoked ${k.id} (${k.prefix}…)\n`);
  });
}

export function keysRotate(id: string, opts: { overlap?: number; expires?: Date; json?: boolean }): Promise<void> {
  return withMigratedDatabase(async (h, cfg) => {
    const { key, view, previous } = await keyService(h, cfg).rotate(id, undefined, { overlapSeconds: opts.overlap, expiresAt: opts.expires });
    if (opts.json) process.stdout.write(`${JSON.stringify({ key, id: view.id, previousId: previous.id, overlapEndsAt: previous.expiresAt })}\n`);
    else process.stdout.write(`${key}\n\nid ${view.id} · replaces ${previous.id} · tenant ${view.tenant} · principal ${view.principal}\nThe old key (${previous.prefix}…) works until ${previous.expiresAt}, then is refused.\nThe key is shown only once.\n`);
  });
}

/** The gRPC transport, when configured: after HTTP listens, so discovery advertises it only once both are up. */
async function startGrpc(host: Host, cfg: HostConfig): Promise<void> {
  if (!cfg.grpc.enabled) return;
  try {
    const g = await host.app.get(GrpcListener).start();
    host.logger.info({ msg: 'openwop gRPC transport listening', endpoint: g.endpoint, tls: cfg.grpc.tls, reflection: cfg.grpc.reflection, ...(cfg.grpc.reason === 'test-seams' ? { because: 'OPENWOP_TEST_SEAMS' } : {}) });
  } catch (e) {
    await host.close().catch(() => undefined);
    const code = (e as { code?: string }).code;
    const where = `${cfg.grpc.host}:${cfg.grpc.port}`;
    const reason = code === 'EADDRINUSE' ? 'the address is already in use' : code === 'EACCES' ? 'permission denied' : oneLineReason(e);
    throw new StartupError('listen', `cannot listen for gRPC on ${where}: ${reason}`, { cause: e });
  }
}
export async function writeOpenApi(opts: { out?: string; scopesOut?: string }): Promise<void> {
  // Loaded by the command that uses them, not by `serve`.
  const { generateOpenApiDocument } = await import('../openapi-generate');
  const { routeScopesTable } = await import('../platform/openapi/route-scopes');
  const doc = await generateOpenApiDocument();
  const text = `${JSON.stringify(doc, null, 2)}\n`;
  if (opts.out) fs.writeFileSync(opts.out, text);
  else process.stdout.write(text);
  // The table covers a conformance host's seams too: who can reach them is reviewed like any route.
  if (opts.scopesOut) fs.writeFileSync(opts.scopesOut, routeScopesTable(await generateOpenApiDocument({ testSeams: true })));
}

/** Portability (RFC 0098): the host boots without listening; logs go to stderr so stdout is the bundle. */
async function withPortabilityApp(fn: (app: Awaited<ReturnType<typeof createHost>>['app']) => Promise<number>): Promise<void> {
  // A one-shot process: no scheduler ticks, no bootstrap key.
  const host = await createHost({ ...config(), schedulerEnabled: false, bootstrapKey: false }, { logDestination: process.stderr, openApi: false, joinEmbedded: true });
  try {
    process.exitCode = await fn(host.app);
  } finally {
    await host.close();
  }
}

export function exportEstate(opts: Parameters<typeof PortabilityCli.exportCommand>[1]): Promise<void> {
  return withPortabilityApp(async (app) => (await import('../capabilities/portability/portability.cli')).exportCommand(app, opts));
}

export function importBundle(file: string, opts: Parameters<typeof PortabilityCli.importCommand>[2]): Promise<void> {
  return withPortabilityApp(async (app) => (await import('../capabilities/portability/portability.cli')).importCommand(app, file, opts));
}
