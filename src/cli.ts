import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { MIGRATIONS } from '../migrations';
import { consoleBuilt } from './console/console-assets';
import { createHost, Host, oneLineReason, StartupError } from './bootstrap';
import { PROJECT_ROOT } from './platform/project-root';
import { ConfigError, HostConfig, loadHostConfig } from './platform/config/host-config';
import { openDatabase } from './platform/database/data-source.factory';
import { migrationStatus, pendingMigrations, runMigrations } from './platform/database/migration-runner';
import { ApiKeyService } from './platform/identity/api-key.service';
import { generateOpenApiDocument } from './platform/openapi/generate';
import { routeScopesTable } from './platform/openapi/route-scopes';
import { ROLES } from './platform/identity/scopes';
import { exportCommand, importCommand } from './capabilities/portability/portability.cli';
import { RunsCliOptions, runsCancel, runsList, runsStart } from './capabilities/runs/runs.cli';
import { GrpcListener } from './transport/grpc/grpc-listener';

function config(): HostConfig {
  return loadHostConfig(process.env);
}

/** Opens the database the host uses (joining a running embedded host through its socket). */
async function withDatabase<T>(fn: (h: Awaited<ReturnType<typeof openDatabase>>, cfg: HostConfig) => Promise<T>): Promise<T> {
  const cfg = config();
  const handle = await openDatabase(cfg, { poolSize: 2, joinEmbedded: true });
  try {
    return await fn(handle, cfg);
  } finally {
    await handle.close();
  }
}

function keyService(h: Awaited<ReturnType<typeof openDatabase>>, cfg: HostConfig): ApiKeyService {
  return new ApiKeyService(h.dataSource, cfg);
}

/**
 * The console is built on install (`prepare`); a clone installed with --ignore-scripts, or sources
 * changed since (a pull), are built here before listening. A no-op when the build is current.
 */
function buildConsoleIfStale(cfg: HostConfig): void {
  if (!cfg.consoleEnabled) return;
  const script = path.join(PROJECT_ROOT, 'bin', 'build-console.js');
  const r = spawnSync(process.execPath, [script, '--if-stale'], { stdio: 'inherit' });
  if (r.status !== 0) process.stderr.write(`console: the build failed; the host starts ${consoleBuilt() ? 'with the previous build' : 'without it'}\n`);
}

/**
 * Opens the database for a command that reads or writes its tables (keys). A fresh database (say, a
 * new embedded data folder before the first `serve`) is migrated first when OPENWOP_MIGRATE_ON_START
 * allows it, exactly as `serve` would; otherwise the command stops and names the command to run.
 */
async function withMigratedDatabase<T>(fn: (h: Awaited<ReturnType<typeof openDatabase>>, cfg: HostConfig) => Promise<T>): Promise<T> {
  return withDatabase(async (h, cfg) => {
    const pending = await pendingMigrations(h.dataSource, MIGRATIONS);
    if (pending.length) {
      if (!cfg.migrateOnStart) {
        throw new Error(`the database has ${pending.length} pending migration(s); run \`openwop-host migrate\` first (OPENWOP_MIGRATE_ON_START is false)`);
      }
      const applied = await runMigrations(h.dataSource, MIGRATIONS);
      process.stderr.write(`applied ${applied.length} pending migration(s) first\n`);
    }
    return fn(h, cfg);
  });
}

async function serve(): Promise<void> {
  const cfg = config();
  buildConsoleIfStale(cfg);
  const host = await createHost(cfg);
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
  log.info({ url: base, database: host.db?.describe ?? 'external', plugins: host.plugins.loaded.map((p) => p.id) }, 'openwop host listening');
  await startGrpc(host, cfg);
  if (cfg.bootstrapKey && (await keys.count()) === 0) {
    const { key } = await keys.create({ tenant: 'default', principal: 'admin', roles: ['admin'], name: 'bootstrap' });
    process.stdout.write(
      [
        '',
        'No API key existed, so an admin key for tenant "default" was created. It is shown only this once:',
        '',
        `  ${key}`,
        '',
        'Try it:',
        `  curl -s ${base}/.well-known/openwop`,
        `  curl -s -H "Authorization: Bearer ${key}" ${base}/v1/tools`,
        '',
        `Manage keys with: npx openwop-host keys create --tenant default --principal me --role editor`,
        `API reference: ${base}/docs`,
        `Operator console: ${base}/console/ (sign in with the key above)`,
        '',
      ].join('\n'),
    );
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    await host.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

/** The gRPC transport, when configured: after HTTP listens, so discovery advertises it only once both are up. */
async function startGrpc(host: Host, cfg: HostConfig): Promise<void> {
  if (!cfg.grpc.enabled) return;
  try {
    const g = await host.app.get(GrpcListener).start();
    host.logger.info({ endpoint: g.endpoint, tls: cfg.grpc.tls, reflection: cfg.grpc.reflection, ...(cfg.grpc.reason === 'test-seams' ? { because: 'OPENWOP_TEST_SEAMS' } : {}) }, 'openwop gRPC transport listening');
  } catch (e) {
    await host.close().catch(() => undefined);
    const code = (e as { code?: string }).code;
    const where = `${cfg.grpc.host}:${cfg.grpc.port}`;
    const reason = code === 'EADDRINUSE' ? 'the address is already in use' : code === 'EACCES' ? 'permission denied' : oneLineReason(e);
    throw new StartupError('listen', `cannot listen for gRPC on ${where}: ${reason}`, { cause: e });
  }
}

function parseScopes(v: string): string[] {
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}

function parseDate(v: string): Date {
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) throw new InvalidArgumentError('expected an ISO 8601 date');
  return d;
}

export function buildCli(): Command {
  const program = new Command('openwop-host').description('OpenWOP host: serve, migrate, manage API keys, export and import').showHelpAfterError();

  program.command('serve').description('start the HTTP server (embedded PostgreSQL unless DATABASE_URL is set)').action(serve);

  const migrate = program.command('migrate').description('database migrations');
  migrate
    .command('up', { isDefault: true })
    .description('apply pending migrations')
    .action(() =>
      withDatabase(async (h) => {
        const applied = await runMigrations(h.dataSource, MIGRATIONS);
        process.stdout.write(applied.length ? `applied:\n${applied.map((a) => `  ${a}`).join('\n')}\n` : 'nothing to apply\n');
      }),
    );
  migrate
    .command('status')
    .description('list migrations and whether each is applied')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) =>
      withDatabase(async (h) => {
        const status = await migrationStatus(h.dataSource, MIGRATIONS);
        if (opts.json) process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
        else for (const s of status) process.stdout.write(`${s.applied ? 'applied ' : 'pending '} ${s.name}${s.appliedAt ? `  (${s.appliedAt})` : ''}\n`);
      }),
    );
  migrate
    .command('diff')
    .description('(development) apply migrations, then print the SQL the entities still need: the body of the next migration')
    .action(() =>
      withDatabase(async (h) => {
        await runMigrations(h.dataSource, MIGRATIONS);
        const log = await h.dataSource.driver.createSchemaBuilder().log();
        if (!log.upQueries.length) process.stdout.write('-- entities and migrations agree\n');
        for (const q of log.upQueries) process.stdout.write(`${q.query.replace(/uuid_generate_v4\(\)/g, 'gen_random_uuid()')};\n`);
      }),
    );

  const keys = program.command('keys').description('API keys');
  keys
    .command('create')
    .description('mint an API key (printed once)')
    .requiredOption('--tenant <tenant>', 'tenant the key belongs to')
    .option('--workspace <workspace>', 'workspace the key is bound to')
    .requiredOption('--principal <principal>', 'principal id the key acts as')
    .option('--scopes <scopes>', 'comma-separated scopes', parseScopes)
    .option('--role <role>', `role: ${Object.keys(ROLES).join(', ')}`)
    .option('--expires <iso>', 'expiry (ISO 8601)', parseDate)
    .option('--name <name>', 'a label')
    .option('--json', 'print {"key", "id"} as JSON')
    .action((opts: { tenant: string; workspace?: string; principal: string; scopes?: string[]; role?: string; expires?: Date; name?: string; json?: boolean }) =>
      withMigratedDatabase(async (h, cfg) => {
        if (!opts.scopes?.length && !opts.role) throw new InvalidArgumentError('give --scopes or --role');
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
      }),
    );
  keys
    .command('list')
    .description('list the keys of a tenant (never their secrets)')
    .requiredOption('--tenant <tenant>')
    .option('--json', 'print JSON')
    .action((opts: { tenant: string; json?: boolean }) =>
      withMigratedDatabase(async (h, cfg) => {
        const list = await keyService(h, cfg).list(opts.tenant);
        if (opts.json) process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
        else
          for (const k of list) {
            const state = k.revokedAt ? 'revoked' : k.expiresAt && new Date(k.expiresAt) < new Date() ? 'expired' : 'active';
            process.stdout.write(`${k.id}  ${k.prefix}…  ${state.padEnd(7)}  ${k.principal}  ${[...k.scopes, ...k.roles.map((r) => `role:${r}`)].join(',')}\n`);
          }
      }),
    );
  keys
    .command('revoke <id>')
    .description('revoke a key by id')
    .action((id: string) =>
      withMigratedDatabase(async (h, cfg) => {
        const k = await keyService(h, cfg).revoke(id);
        process.stdout.write(`revoked ${k.id} (${k.prefix}…)\n`);
      }),
    );

  program
    .command('openapi')
    .description('write the OpenAPI document the host serves (deterministic)')
    .option('--out <file>', 'file to write (default: stdout)')
    .option('--scopes-out <file>', 'also write the method + path → scopes table')
    .action(async (opts: { out?: string; scopesOut?: string }) => {
      const doc = await generateOpenApiDocument();
      const text = `${JSON.stringify(doc, null, 2)}\n`;
      if (opts.out) fs.writeFileSync(opts.out, text);
      else process.stdout.write(text);
      if (opts.scopesOut) fs.writeFileSync(opts.scopesOut, routeScopesTable(doc));
    });

  // Portability (RFC 0098): the host boots without listening; logs go to stderr so stdout is the bundle.
  const withPortabilityApp = async (fn: (app: Awaited<ReturnType<typeof createHost>>['app']) => Promise<number>) => {
    // A one-shot process: no scheduler ticks, no bootstrap key.
    const host = await createHost({ ...config(), schedulerEnabled: false, bootstrapKey: false }, { logDestination: process.stderr, openApi: false, joinEmbedded: true });
    try {
      process.exitCode = await fn(host.app);
    } finally {
      await host.close();
    }
  };
  program
    .command('export')
    .description("export a tenant's estate as a secret-free bundle (JSON on stdout, or --out)")
    .requiredOption('--tenant <tenant>', 'tenant to export')
    .option('--workspace <workspace>', 'workspace to export (with the tenant-wide estate)')
    .option('--principal <principal>', 'principal recorded as source.originPrincipal (default: system)')
    .option('--kinds <kinds>', 'comma-separated bundle item kinds (default: all the host exports)')
    .option('--out <file>', 'write the bundle to a file')
    .action((opts: { tenant: string; workspace?: string; principal?: string; kinds?: string; out?: string }) => withPortabilityApp((app) => exportCommand(app, opts)));
  program
    .command('import <file>')
    .description('import a bundle file ("-" for stdin) into a tenant, all or nothing; --dry-run writes nothing (exit 2 on conflicts)')
    .requiredOption('--tenant <tenant>', 'tenant that will own what is imported')
    .option('--workspace <workspace>', 'workspace that will own what is imported')
    .option('--principal <principal>', 'principal that will own what is imported (default: system)')
    .option('--dry-run', 'print the plan; write nothing')
    .option('--json', 'print the full plan or result as JSON')
    .action((file: string, opts: { tenant: string; workspace?: string; principal?: string; dryRun?: boolean; json?: boolean }) => withPortabilityApp((app) => importCommand(app, file, opts)));

  // Runs: a client of a running host (the engine executes runs there), over its HTTP API.
  const runs = program
    .command('runs')
    .description('start, follow, list and cancel workflow runs on a running host (--url, --key or OPENWOP_HOST_URL, OPENWOP_API_KEY)')
    .option('--url <url>', 'base URL of the host (default: OPENWOP_HOST_URL, else http://127.0.0.1:$PORT)')
    .option('--key <key>', 'API key (default: OPENWOP_API_KEY)');
  const client = (): RunsCliOptions => {
    const o = runs.opts<{ url?: string; key?: string }>();
    const key = o.key ?? process.env.OPENWOP_API_KEY;
    if (!key) throw new InvalidArgumentError('give --key or set OPENWOP_API_KEY');
    const url = o.url ?? process.env.OPENWOP_HOST_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8080}`;
    if (!/^https?:\/\//.test(url)) throw new InvalidArgumentError('--url must be an http(s) URL');
    return { url, key, out: process.stdout, err: process.stderr };
  };
  const collect = (v: string, prev: string[] = []) => [...prev, v];
  runs
    .command('start <workflowId>')
    .description('start a run; --follow streams its events with a progress line (exit 1 unless it completes)')
    .option('--input <k=v>', 'a run input (repeatable; JSON values are parsed)', collect)
    .option('--follow', 'stream the events until the run ends')
    .option('--idempotency-key <key>', 'Idempotency-Key of the request')
    .option('--json', 'print JSON')
    .action(async (workflowId: string, opts: { input?: string[]; follow?: boolean; idempotencyKey?: string; json?: boolean }) => {
      process.exitCode = await runsStart(client(), workflowId, opts);
    });
  runs
    .command('list')
    .description('list runs, newest first')
    .option('--status <status>', 'only runs in this status')
    .option('--limit <n>', 'how many (1-200)', (v) => Number(v))
    .option('--json', 'print JSON')
    .action(async (opts: { status?: string; limit?: number; json?: boolean }) => {
      process.exitCode = await runsList(client(), opts);
    });
  runs
    .command('cancel <runId>')
    .description('cancel a run')
    .action(async (runId: string) => {
      process.exitCode = await runsCancel(client(), runId);
    });

  return program;
}

/**
 * Runs the command line. Any failure prints ONE line on stderr and ends the process with status 1
 * at once: a host that could not start (port taken, database unreachable, migrations, plugins,
 * configuration) must not linger without a listener, where a supervisor would take it for healthy.
 */
export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (e) {
    let line: string;
    if (e instanceof ConfigError) line = `configuration error: ${oneLineReason(e)}`;
    else if (e instanceof StartupError) line = `openwop-host cannot start (${e.phase}): ${e.message}`;
    else line = `error: ${oneLineReason(e)}`;
    process.stderr.write(`${line}\n`);
    process.exit(1);
  }
}
