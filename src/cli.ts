import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { HostClientOptions } from './cli/host-client';
import { ConfigError } from './platform/config/config-error';
import { oneLineReason, StartupError } from './platform/errors/startup-error';
import { ROLES, roleOf } from './platform/identity/scopes';
import { PROJECT_ROOT } from './platform/project-root';

/*
 * The command tree only. Every action loads what it needs when it runs (`await import(...)`): the
 * host (Nest, TypeORM, the application module) for `serve`, `migrate`, `keys`, `openapi`, `export`
 * and `import`; nothing but `fetch` for the client commands (`runs`, `approvals`). So `--help`, an
 * argument error or a missing API key answers at once, before anything is loaded or connected.
 */

const hostCommands = () => import('./cli/host-commands');

function parseScopes(v: string): string[] {
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}

function parseDate(v: string): Date {
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) throw new InvalidArgumentError('expected an ISO 8601 date');
  return d;
}

function parseLimit(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 200) throw new InvalidArgumentError('expected an integer from 1 to 200');
  return n;
}

function parseSeq(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('expected a sequence number (an integer from 0)');
  return n;
}

/** An overlap: whole seconds, or a number with s, m, h or d (`90m`, `24h`, `7d`). */
function parseOverlap(v: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(v.trim());
  if (!m) throw new InvalidArgumentError('expected seconds or a duration such as 90m, 24h or 7d');
  const n = Number(m[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError('the overlap is too long');
  return n;
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

/** The `version` of the host's package.json (from src/ and from the build alike). */
function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * `--url` and `--key` of a client command group, checked before anything connects: a missing key
 * or a malformed URL is an argument error.
 */
function clientOf(group: Command): () => HostClientOptions {
  return () => {
    const o = group.opts<{ url?: string; key?: string }>();
    const key = o.key ?? process.env.OPENWOP_API_KEY;
    if (!key) throw new InvalidArgumentError('give --key or set OPENWOP_API_KEY');
    const urlFrom = o.url !== undefined ? '--url' : process.env.OPENWOP_HOST_URL !== undefined ? 'OPENWOP_HOST_URL' : 'default';
    const url = o.url ?? process.env.OPENWOP_HOST_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8080}`;
    if (!/^https?:\/\/[^/\s]+/.test(url)) throw new InvalidArgumentError('--url must be an http(s) URL');
    return { url, key, out: process.stdout, err: process.stderr, urlArgument: o.url, urlFrom };
  };
}

/** `local`: subcommands of the group that talk to no host (they need no key). */
function clientGroup(program: Command, name: string, description: string, local: string[] = []): { group: Command; client: () => HostClientOptions } {
  const group = program
    .command(name)
    .description(`${description} (--url, --key or OPENWOP_HOST_URL, OPENWOP_API_KEY)`)
    .option('--url <url>', 'base URL of the host (default: OPENWOP_HOST_URL, else http://127.0.0.1:$PORT)')
    .option('--key <key>', 'API key (default: OPENWOP_API_KEY)');
  const client = clientOf(group);
  // Before any subcommand runs (and before it loads anything): the key and the URL.
  group.hook('preAction', (_group, action) => {
    if (!local.includes(action.name())) client();
  });
  return { group, client };
}

export function buildCli(): Command {
  const program = new Command('openwop-host').description('OpenWOP host: serve, migrate, manage API keys, export and import; runs, approvals, packs and the audit log of a running host').showHelpAfterError();
  program.version(packageVersion(), '-V, --version', 'print the version of the host package');

  program
    .command('serve')
    .description('start the HTTP server (embedded PostgreSQL unless DATABASE_URL is set)')
    // The settings are read and the embedded engine starts before the host's modules load (serve-prestart.ts).
    .action(async () => {
      const pre = (await import('./cli/serve-prestart')).prestartServe();
      await (await hostCommands()).serve(pre);
    });

  const migrate = program.command('migrate').description('database migrations');
  migrate
    .command('up', { isDefault: true })
    .description('apply pending migrations')
    .action(async () => (await hostCommands()).migrateUp());
  migrate
    .command('status')
    .description('list migrations and whether each is applied')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => (await hostCommands()).migrateStatus(opts));
  migrate
    .command('diff')
    .description('(development) apply migrations, then print the SQL the entities still need: the body of the next migration')
    .action(async () => (await hostCommands()).migrateDiff());

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
    .action(async (opts: { tenant: string; workspace?: string; principal: string; scopes?: string[]; role?: string; expires?: Date; name?: string; json?: boolean }) => {
      if (!opts.scopes?.length && !opts.role) throw new InvalidArgumentError('give --scopes or --role');
      // By its own name only: `constructor` and other inherited names are unknown roles.
      if (opts.role && !roleOf(opts.role)) throw new InvalidArgumentError(`unknown role "${opts.role}"; roles: ${Object.keys(ROLES).join(', ')}`);
      await (await hostCommands()).keysCreate(opts);
    });
  keys
    .command('list')
    .description('list the keys of a tenant (never their secrets)')
    .requiredOption('--tenant <tenant>')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant: string; json?: boolean }) => (await hostCommands()).keysList(opts));
  keys
    .command('revoke <id>')
    .description('revoke a key by id')
    .action(async (id: string) => (await hostCommands()).keysRevoke(id));
  keys
    .command('rotate <id>')
    .description('rotate a key: mint its successor (printed once); the old key keeps working for the overlap, then is refused')
    .option('--overlap <duration>', 'how long the old key keeps working: seconds or 90m, 24h, 7d (default and bounds: OPENWOP_KEY_ROTATION_*)', parseOverlap)
    .option('--expires <iso>', 'expiry of the successor (ISO 8601; default: the old key\'s)', parseDate)
    .option('--json', 'print {"key", "id", "previousId", "overlapEndsAt"} as JSON')
    .action(async (id: string, opts: { overlap?: number; expires?: Date; json?: boolean }) => (await hostCommands()).keysRotate(id, opts));

  program
    .command('openapi')
    .description('write the OpenAPI document the host serves (deterministic)')
    .option('--out <file>', 'file to write (default: stdout)')
    .option('--scopes-out <file>', 'also write the method + path → scopes table')
    .action(async (opts: { out?: string; scopesOut?: string }) => (await hostCommands()).writeOpenApi(opts));

  program
    .command('export')
    .description("export a tenant's estate as a secret-free bundle (JSON on stdout, or --out)")
    .requiredOption('--tenant <tenant>', 'tenant to export')
    .option('--workspace <workspace>', 'workspace to export (with the tenant-wide estate)')
    .option('--principal <principal>', 'principal recorded as source.originPrincipal (default: system)')
    .option('--kinds <kinds>', 'comma-separated bundle item kinds (default: all the host exports)')
    .option('--out <file>', 'write the bundle to a file')
    .action(async (opts: { tenant: string; workspace?: string; principal?: string; kinds?: string; out?: string }) => (await hostCommands()).exportEstate(opts));
  program
    .command('import <file>')
    .description('import a bundle file ("-" for stdin) into a tenant, all or nothing; --dry-run writes nothing (exit 2 on conflicts)')
    .requiredOption('--tenant <tenant>', 'tenant that will own what is imported')
    .option('--workspace <workspace>', 'workspace that will own what is imported')
    .option('--principal <principal>', 'principal that will own what is imported (default: system)')
    .option('--dry-run', 'print the plan; write nothing')
    .option('--json', 'print the full plan or result as JSON')
    .action(async (file: string, opts: { tenant: string; workspace?: string; principal?: string; dryRun?: boolean; json?: boolean }) => (await hostCommands()).importBundle(file, opts));

  // Runs: a client of a running host (the engine executes runs there), over its HTTP API.
  const runs = clientGroup(program, 'runs', 'start, follow, list and cancel workflow runs on a running host');
  const runsCli = () => import('./cli/runs.cli');
  runs.group
    .command('start <workflowId>')
    .description('start a run; --follow streams its events with a k/n nodes progress line and says when it waits for an approval (exit 1 unless it completes)')
    .option('--input <k=v>', 'a run input (repeatable; JSON values are parsed)', collect)
    .option('--follow', 'stream the events until the run ends')
    .option('--idempotency-key <key>', 'Idempotency-Key of the request')
    .option('--json', 'print JSON')
    .action(async (workflowId: string, opts: { input?: string[]; follow?: boolean; idempotencyKey?: string; json?: boolean }) => {
      process.exitCode = await (await runsCli()).runsStart(runs.client(), workflowId, opts);
    });
  runs.group
    .command('follow <runId>')
    .description('stream the events of a run (from its first), with the k/n nodes progress line, then print its outputs (exit 1 unless it completes)')
    .option('--json', 'print JSON')
    .action(async (runId: string, opts: { json?: boolean }) => {
      process.exitCode = await (await runsCli()).runsFollow(runs.client(), runId, opts);
    });
  runs.group
    .command('list')
    .description('list runs, newest first')
    .option('--status <status>', 'only runs in this status')
    .option('--limit <n>', 'how many (1-200)', parseLimit)
    .option('--json', 'print JSON')
    .action(async (opts: { status?: string; limit?: number; json?: boolean }) => {
      process.exitCode = await (await runsCli()).runsList(runs.client(), opts);
    });
  runs.group
    .command('get <runId>')
    .description('show a run: its status, the run that started it (parent) and the child runs it started')
    .option('--json', 'print JSON (the RunSnapshot)')
    .action(async (runId: string, opts: { json?: boolean }) => {
      process.exitCode = await (await runsCli()).runsGet(runs.client(), runId, opts);
    });
  runs.group
    .command('cancel <runId>')
    .description('cancel a run')
    .action(async (runId: string) => {
      process.exitCode = await (await runsCli()).runsCancel(runs.client(), runId);
    });

  // Dead letters (RFC 0053): runs whose node exhausted its retry policy.
  const dead = clientGroup(program, 'dead-letters', 'list, inspect, retry and purge dead-lettered runs on a running host (list/get need runs:read, retry runs:create, purge runs:cancel)');
  dead.group
    .command('list')
    .description('list the dead-lettered runs, newest first')
    .option('--workflow-id <id>', 'only the runs of this workflow')
    .option('--limit <n>', 'how many (1-100)', parseLimit)
    .option('--json', 'print JSON')
    .action(async (opts: { workflowId?: string; limit?: number; json?: boolean }) => {
      process.exitCode = await (await runsCli()).deadLettersList(dead.client(), opts);
    });
  for (const [action, what] of [['get', 'show a dead-lettered run: the node, reason and attempts'], ['retry', 'run its workflow again with the same inputs'], ['purge', 'remove it from the dead letters (the run stays in the history)']] as const) {
    dead.group
      .command(`${action} <runId>`)
      .description(what)
      .option('--json', 'print JSON')
      .action(async (runId: string, opts: { json?: boolean }) => {
        process.exitCode = await (await runsCli()).deadLetter(dead.client(), action, runId, opts);
      });
  }

  // Packs: install workflow-chain and node packs on a running host, with every check the host makes.
  const packs = clientGroup(program, 'packs', 'install, list and uninstall the packs of a running host (install and uninstall need packs:publish, list tools:read)');
  const packsCli = () => import('./cli/packs.cli');
  packs.group
    .command('install <fileOrDir>')
    .description('install a pack manifest file, or every *.json file of a directory; a refused pack prints every problem (exit 1 unless all installed)')
    .option('--json', 'print JSON')
    .action(async (target: string, opts: { json?: boolean }) => {
      process.exitCode = await (await packsCli()).packsInstall(packs.client(), target, opts);
    });
  packs.group
    .command('list')
    .description('list the installed packs (id, kind, name@version, chains)')
    .addOption(new Option('--kind <kind>', 'only packs of this kind').choices(['workflow-chain', 'node']))
    .option('--json', 'print JSON')
    .action(async (opts: { kind?: string; json?: boolean }) => {
      process.exitCode = await (await packsCli()).packsList(packs.client(), opts);
    });
  packs.group
    .command('uninstall <id>')
    .description('uninstall a pack by id (runs already started keep their chain)')
    .action(async (id: string) => {
      process.exitCode = await (await packsCli()).packsUninstall(packs.client(), id);
    });

  // MCP: the revisions negotiated with the configured MCP servers and the pinned tool definitions.
  const mcp = clientGroup(program, 'mcp', 'see the MCP servers and their negotiated revisions, list pinned MCP tool definitions and approve a held one on a running host (needs tools:manage, a tenant-level key)');
  const mcpCli = () => import('./cli/mcp.cli');
  mcp.group
    .command('servers')
    .description('list the MCP servers of the tenant: transport, downgrade policy, negotiated revision, held tools')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      process.exitCode = await (await mcpCli()).mcpServers(mcp.client(), opts);
    });
  mcp.group
    .command('pins')
    .description('list the pinned MCP tool definitions (held ones are out of the catalog until approved)')
    .addOption(new Option('--state <state>', 'only pins in this state').choices(['approved', 'held']))
    .option('--server <serverId>', 'only the pins of this server')
    .option('--json', 'print JSON')
    .action(async (opts: { state?: string; server?: string; json?: boolean }) => {
      process.exitCode = await (await mcpCli()).mcpPins(mcp.client(), opts);
    });
  mcp.group
    .command('approve <serverId> <toolName>')
    .description('approve the definition a held MCP tool serves now (--digest: the observed digest you reviewed)')
    .option('--digest <digest>', 'the sha256:<hex> digest of the reviewed definition (default: the one the host observes now)')
    .option('--json', 'print JSON')
    .action(async (serverId: string, toolName: string, opts: { digest?: string; json?: boolean }) => {
      process.exitCode = await (await mcpCli()).mcpApprove(mcp.client(), serverId, toolName, opts);
    });

  // Tools: the governed dispatch policy of the tenant (allow, approve or deny a tool call by tier and per tool).
  const tools = clientGroup(program, 'tools', 'show and set the governed tool dispatch policy of a running host (needs tools:manage, a tenant-level key)');
  const toolsCli = () => import('./cli/tools.cli');
  const policy = tools.group.command('policy').description('the tenant\'s tool dispatch policy: which calls are allowed, wait on an approval or are denied');
  policy
    .command('show', { isDefault: true })
    .description('print the policy in force: its revision, where it comes from, the decision per tier and per tool')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      process.exitCode = await (await toolsCli()).toolsPolicyShow(tools.client(), opts);
    });
  policy
    .command('set')
    .description('replace the tenant\'s override with the JSON policy in a file ({"tiers": {...}, "tools": {...}}; "-" reads stdin)')
    .requiredOption('--file <file>', 'the policy file')
    .option('--revision <n>', 'refuse the change unless the policy is still at this revision')
    .option('--json', 'print JSON')
    .action(async (opts: { file: string; revision?: string; json?: boolean }) => {
      process.exitCode = await (await toolsCli()).toolsPolicySet(tools.client(), opts);
    });

  // Approvals: RFC 0051 gates of runs and proposals, decided on a running host.
  const approvals = clientGroup(program, 'approvals', 'list, grant, deny and resolve the approval gates and interrupts of a running host (needs approvals:respond)');
  const approvalsCli = () => import('./cli/approvals.cli');
  approvals.group
    .command('list')
    .description('list approval gates, newest first: the pending ones unless --state or --all')
    .addOption(new Option('--state <state>', 'only gates in this state (default: pending)').choices(['pending', 'granted', 'denied', 'expired', 'cancelled']).conflicts('all'))
    .option('--all', 'gates in every state')
    .option('--limit <n>', 'how many (1-200)', parseLimit)
    .option('--json', 'print JSON')
    .action(async (opts: { state?: string; all?: boolean; limit?: number; json?: boolean }) => {
      process.exitCode = await (await approvalsCli()).approvalsList(approvals.client(), opts);
    });
  for (const decision of ['grant', 'deny'] as const) {
    approvals.group
      .command(`${decision} <approvalId>`)
      .description(decision === 'grant' ? 'grant a gate (released once its quorum of approvers granted it)' : 'deny a gate (closes it; a run step fails, a proposal is not installed)')
      .option('--reason <text>', 'why (recorded with the decision)')
      .option('--json', 'print JSON')
      .action(async (id: string, opts: { reason?: string; json?: boolean }) => {
        process.exitCode = await (await approvalsCli()).approvalsDecide(approvals.client(), decision, id, opts);
      });
  }
  approvals.group
    .command('resolve <approvalId>')
    .description('resolve the interrupt of a run step with a resume value (a clarification: {"answers":{...}}; an external event: the event object)')
    .requiredOption('--value <json>', 'the resume value, JSON')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { value: string; json?: boolean }) => {
      process.exitCode = await (await approvalsCli()).approvalsResolve(approvals.client(), id, opts);
    });

  // Connections: rotate a connection's credential with a two-key overlap (RFC 0046 §D), or end the overlap.
  const connections = clientGroup(program, 'connections', 'rotate the credential of a connection on a running host with a two-key overlap, or end the overlap (needs connections:manage, a tenant-level key)');
  const connectionsCli = () => import('./cli/connections.cli');
  connections.group
    .command('rotate-credential <connectionId>')
    .description('replace the credential (read from a file, "-" for stdin; never printed); the replaced one is still offered for the overlap')
    .requiredOption('--credential-file <file>', 'file holding the new credential ("-": stdin; one trailing newline is dropped)')
    .option('--overlap-seconds <n>', 'seconds the replaced credential is still offered (0: at once; default: the host\'s connections.credentialOverlapSeconds)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { credentialFile: string; overlapSeconds?: string; json?: boolean }) => {
      process.exitCode = await (await connectionsCli()).connectionsRotateCredential(connections.client(), id, opts);
    });
  connections.group
    .command('retire-previous <connectionId>')
    .description('end the overlap now: the credential the last rotation replaced is deleted')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      process.exitCode = await (await connectionsCli()).connectionsRetirePrevious(connections.client(), id, opts);
    });

  // Audit: the tenant's tamper-evident audit log, verified by a running host and checked here.
  const audit = clientGroup(program, 'audit', 'verify the tamper-evident audit log of a running host (needs audit:read, a tenant-level key); make its signing key', ['keygen']);
  audit.group
    .command('verify')
    .description('re-walk the hash chain on the host and check every signed checkpoint here against the advertised public key (exit 1 unless all hold)')
    .option('--from <seq>', 'first sequence (default: the start of the chain)', parseSeq)
    .option('--to <seq>', 'last sequence (default: the chain head)', parseSeq)
    .option('--since <checkpoint>', 'pin: a checkpoint id to trust from now on, or "pinned" for the one remembered; it must still be there unchanged, and the newest verified checkpoint becomes the pin')
    .option('--pin-file <file>', 'where pins are kept (default: $XDG_STATE_HOME/openwop-host/audit-pins.json, else ~/.local/state/...)')
    .option('--sink-file <file>', 'a JSON-lines file of exported checkpoints (OPENWOP_AUDIT_EXPORT_FILE): each must still be on the host')
    .option('--trusted-key <spki>', 'a further checkpoint key (base64 SPKI) whose signatures hold: a previous key, or a rotated one (repeatable)', collect)
    .option('--json', 'print JSON')
    .action(async (opts: { from?: number; to?: number; json?: boolean; since?: string; pinFile?: string; sinkFile?: string; trustedKey?: string[] }) => {
      const { trustedKey, ...rest } = opts;
      process.exitCode = await (await import('./cli/audit.cli')).auditVerify(audit.client(), { ...rest, trustedKeys: trustedKey });
    });
  audit.group
    .command('keygen')
    .description('write a new Ed25519 audit checkpoint signing key (PKCS#8 PEM, owner-only) for OPENWOP_AUDIT_SIGNING_KEY_FILE, and print its public key')
    .requiredOption('--out <file>', 'the key file to write')
    .option('--force', 'replace an existing file')
    .action(async (opts: { out: string; force?: boolean }) => {
      process.exitCode = (await import('./cli/audit.cli')).auditKeygen(opts, { out: process.stdout });
    });

  return program;
}

/**
 * Runs the command line. Any failure prints ONE line on stderr and ends the process with status 1
 * at once: a host that could not start (port taken, database unreachable, migrations, plugins,
 * configuration) must not linger without a listener, where a supervisor would take it for healthy.
 */
export async function main(argv: string[]): Promise<void> {
  // A request whose socket the peer drops can leave fetch's promise pending with nothing keeping the
  // process alive: it would end with status 0 and say nothing. A command still unsettled when the
  // event loop runs dry failed.
  let settled = false;
  const unanswered = () => {
    if (settled) return;
    process.stderr.write('error: the command ended without an answer (the connection was closed)\n');
    process.exit(1);
  };
  process.once('beforeExit', unanswered);
  try {
    await buildCli().parseAsync(argv);
    settled = true;
  } catch (e) {
    settled = true;
    let line: string;
    if (e instanceof ConfigError) line = `configuration error: ${oneLineReason(e)}`;
    else if (e instanceof StartupError) line = `openwop-host cannot start (${e.phase}): ${e.message}`;
    else line = `error: ${oneLineReason(e)}`;
    process.stderr.write(`${line}\n`);
    process.exit(1);
  }
}
