import * as fs from 'node:fs';
import { envInt } from './env-int';
import * as path from 'node:path';
import type { SchemaRegistry } from '../schemas/schema-registry';
import { loadOtlpMetricsConfig, loadTracingConfig, OTEL_ENV_SETTINGS, OtlpMetricsConfig, TracingConfig } from './otel-settings';
import { AUDIT_ENV_SETTINGS, AuditConfig, loadAuditSettings } from './audit-settings';
import { FORCE_EXPIRE_ENV_SETTINGS, ForceExpireConfig, loadForceExpireSettings } from './force-expire-settings';
import { ConfigError } from './config-error';
import { KeyringError, parseKeyring } from './credential-keys';
import type { EnvSetting } from './env-setting';
import { GRPC_ENV_SETTINGS, GrpcConfig, GrpcSettingError, loadGrpcConfig } from './grpc-settings';
import { loadMcpMountConfig, MCP_MOUNT_ENV_SETTINGS, McpMountConfig, McpMountSettingError } from './mcp-mount-settings';
import { loadWebhookSettings, WEBHOOK_ENV_SETTINGS, WebhookSettingError, WebhookSettings } from './webhook-settings';
import { loadWorkspaceSettings, WORKSPACE_ENV_SETTINGS, WorkspaceSettings } from './workspace-settings';
import { loadProtocolSettings, PROTOCOL_ENV_SETTINGS, ProtocolSettingError, ProtocolSettings } from './protocol-settings';
import { loadSharedStoreSettings, SHARED_STORE_ENV_SETTINGS, SharedStoreConfig } from './shared-store-settings';
import { ADMISSION_ENV_SETTINGS, AdmissionSettings, loadAdmissionSettings } from './admission-settings';
import { IDENTITY_ENV_SETTINGS, IdentitySettings, loadIdentitySettings } from './identity-settings';
import { KEY_ROTATION_ENV_SETTINGS, KeyRotationSettings, loadKeyRotationSettings } from './key-rotation-settings';
import { loadRetentionSettings, RETENTION_ENV_SETTINGS, RetentionConfig } from './retention-settings';
import { EMBEDDED_ENV_SETTINGS, EmbeddedConfig, loadEmbeddedSettings } from './embedded-settings';

export type { EmbeddedConfig };

/**
 * Every setting of the host. Scalars come from environment variables (validated here at start);
 * structured settings (lists of MCP servers, declared tools...) come from the JSON or YAML file named
 * by OPENWOP_CONFIG, validated against schemas/host-config.schema.json.
 */
export interface HostConfig {
  port: number;
  host: string;
  trustProxy: boolean;
  databaseUrl?: string;
  dataDir: string;
  configFile?: string;
  file: HostConfigFile;
  plugins: string[];
  /** Folder outside the checkout that plugins are installed into (`npm install --prefix`); names in `plugins` resolve from it first. */
  pluginsDir?: string;
  pluginsStrict: boolean;
  testSeams: boolean;
  /** The retention force-expire seam's listener (only with testSeams). */
  forceExpire: ForceExpireConfig;
  maxRequestBodyBytes: number;
  /** Shape limits of every JSON request body and query, checked before any handler runs. */
  json: JsonLimits;
  migrateOnStart: boolean;
  logLevel: string;
  apiKeyPrefix: string;
  bootstrapKey: boolean;
  /** How long a replica trusts a verified API key before reading it again, while revocations cannot arrive as notifications. */
  keyRecheckMs: number;
  /** API-key rotation overlaps (src/platform/config/key-rotation-settings). */
  keyRotation: KeyRotationSettings;
  jwt: {
    secret?: string;
    jwksUrl?: string;
    issuer?: string;
    audience?: string;
    algorithms: string[];
    /** Longest lifetime (exp - iat, or exp - now without iat) a JWT may grant, in seconds. */
    maxLifetimeS: number;
    claims: { tenant: string; workspace: string; principal: string; scopes: string; roles: string };
  };
  credentialKeys: string;
  /** Signing secret of interrupt tokens (OPENWOP_INTERRUPT_TOKEN_SECRET); unset: one generated once and kept in the database. */
  interruptTokenSecret?: string;
  proposalsActivation: 'direct-rbac' | 'approval-gate';
  schedulerTickMs: number;
  schedulerEnabled: boolean;
  instanceId: string;
  toolSourceTimeoutMs: number;
  /** Serve the operator console at /console. */
  consoleEnabled: boolean;
  /** Who may read GET /metrics: anyone, a credential with metrics:read, or nobody (route not mounted). */
  metrics: 'public' | 'scope' | 'off';
  rateLimit: RateLimitConfig;
  sharedStore: SharedStoreConfig; // OPENWOP_REDIS_URL (shared-store-settings): off by default
  database: DatabaseConfig;
  embedded: EmbeddedConfig;
  http: HttpTimeouts;
  /** The gRPC transport's settings (read here, src/platform/config/grpc-settings; served by src/transport/grpc). */
  grpc: GrpcConfig;
  /** The MCP server mount's settings (read here, src/platform/config/mcp-mount-settings; served by src/transport/mcp). */
  mcpMount: McpMountConfig;
  /** Webhook delivery (src/capabilities/webhooks). */
  webhooks: WebhookSettings;
  /** The agent workspace file store (src/capabilities/workspace, RFC 0059). */
  workspace: WorkspaceSettings;
  tracing: TracingConfig; // OpenTelemetry traces (src/platform/tracing): off unless OPENWOP_TRACING or OTEL_TRACES_EXPORTER asks
  otlpMetrics: OtlpMetricsConfig; // metrics pushed over OTLP (src/platform/metrics): off unless OTEL_METRICS_EXPORTER=otlp
  /** The tamper-evident audit log (src/platform/audit). */
  audit: AuditConfig;
  /** How long finished runs and idempotency records are kept (src/platform/retention). */
  retention: RetentionConfig;
  /** Admission of new runs under load: the per-tenant in-flight cap (admission-settings). */
  admission: AdmissionSettings;
  /** OIDC user-bearer and OAuth2 client-credentials lanes, SCIM tokens (identity-settings). */
  identity: IdentitySettings;
  /** Run artifacts (src/capabilities/runs/artifacts): the largest one a node may store. */
  artifacts: { maxBytes: number };
  /** A fork that would execute a chain (or a chain version) no longer installed: refused (422), unless `allow`. */
  forkUninstalledChains: 'refuse' | 'allow';
  /** The protocol majors served (OPENWOP_PROTOCOL_MAJORS; src/platform/config/protocol-settings). */
  protocol: ProtocolSettings;
}

export type { AuditConfig } from './audit-settings';

export type { RetentionConfig } from './retention-settings';

/** Pool and timeouts of the database connections (a server's; the embedded engine uses what applies). */
export interface DatabaseConfig {
  poolSize: number;
  connectTimeoutMs: number;
  /** 0: no limit. */
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
  /** The hot statements as named prepared statements (parsed and planned once per connection). */
  preparedStatements: boolean;
}

/** Deadlines of the HTTP server against slow or stuck clients. */
export interface HttpTimeouts {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  sendTimeoutMs: number;
}

/** A fixed-window budget: at most `limit` requests per `windowMs`. */
export interface RateBudget {
  limit: number;
  windowMs: number;
}

/** The route classes requests are counted in (see src/platform/rate-limit). */
export type RateClass = 'read' | 'write' | 'auth-failures' | 'public';

export interface RateLimitConfig {
  enabled: boolean;
  budgets: Record<RateClass, RateBudget>;
}

/** The parsed OPENWOP_CONFIG file. Each capability reads its own section. */
export interface HostConfigFile {
  tools?: {
    mcpServers?: Array<Record<string, unknown>>;
    hostExtensions?: Array<Record<string, unknown>>;
    packDirectory?: string;
    cacheTtlMs?: number;
  };
  goals?: Record<string, unknown>;
  connections?: Record<string, unknown>;
  plugins?: Record<string, Record<string, unknown>>;
  [section: string]: unknown;
}

export interface JsonLimits {
  maxDepth: number;
  maxKeys: number;
  maxItems: number;
  maxStringLength: number;
}

export const HOST_CONFIG = Symbol.for('openwop-host.config');

export { ConfigError } from './config-error';

export type { EnvSetting } from './env-setting';

/** The documented environment variables (the README table is written from this list). */
export const ENV_SETTINGS: EnvSetting[] = [
  { name: 'PORT', default: '8080', description: 'TCP port the HTTP server listens on.' },
  { name: 'HOST', default: '127.0.0.1', description: 'Bind address (use 0.0.0.0 in containers).' },
  { name: 'OPENWOP_TRUST_PROXY', default: 'false', description: 'Trust X-Forwarded-* headers (set behind a load balancer or reverse proxy).' },
  { name: 'DATABASE_URL', description: 'PostgreSQL connection string. Unset: the embedded PostgreSQL under OPENWOP_DATA_DIR.' },
  { name: 'OPENWOP_DATA_DIR', default: './.data', description: 'Folder of the embedded database (and its socket, used by the CLI while the host runs).' },
  { name: 'OPENWOP_CONFIG', description: 'Path of a JSON or YAML file with structured settings (MCP servers, host-extension tools, plugin options), validated against schemas/host-config.schema.json.' },
  { name: 'OPENWOP_PLUGINS', description: 'Comma-separated plugin package names or paths to load.' },
  { name: 'OPENWOP_PLUGINS_DIR', description: 'Folder plugins are installed into (`npm install --prefix <dir> --legacy-peer-deps <plugin.tgz>`), outside the host\'s checkout: the package names of OPENWOP_PLUGINS are looked up in it first, and its plugins share the host\'s Nest and plugin SDK.' },
  { name: 'OPENWOP_PLUGINS_STRICT', default: 'false', description: 'When true, a plugin that fails to load stops the host.' },
  { name: 'OPENWOP_TEST_SEAMS', default: 'false', description: 'Serve the /v1/host/sample/* conformance seams (authenticated). Never on in production.' },
  { name: 'OPENWOP_MAX_BODY_BYTES', default: '1048576', description: 'Request body limit, enforced and advertised as limits.maxRequestBodyBytes.' },
  { name: 'OPENWOP_JSON_MAX_DEPTH', default: '64', description: 'Deepest nesting of objects and arrays accepted in a JSON body (deeper: 400 `validation_error`).' },
  { name: 'OPENWOP_JSON_MAX_KEYS', default: '1000', description: 'Most properties one JSON object of a body may have (more: 413 `payload_too_large`).' },
  { name: 'OPENWOP_JSON_MAX_ITEMS', default: '10000', description: 'Most elements one JSON array of a body may have, and most values one query parameter may repeat (more: 413).' },
  { name: 'OPENWOP_JSON_MAX_STRING', default: '262144', description: 'Longest string (in UTF-16 code units) accepted in a JSON body, query or path parameter (longer: 413).' },
  { name: 'OPENWOP_MIGRATE_ON_START', default: 'true', description: 'Apply pending migrations when the host starts (otherwise run `openwop-host migrate`).' },
  { name: 'LOG_LEVEL', default: 'info', description: 'trace, debug, info, warn, error, fatal or silent.' },
  { name: 'OPENWOP_API_KEY_PREFIX', default: 'owk_', description: 'Prefix of the API keys the host mints.' },
  { name: 'OPENWOP_KEY_RECHECK_MS', default: '1000', description: 'Where revocations cannot arrive as PostgreSQL notifications (the embedded engine, or while the listener reconnects), how long a replica trusts a verified API key before reading it again: bounds how long a key revoked elsewhere (another replica, the CLI) still works here.' },
  { name: 'OPENWOP_BOOTSTRAP_KEY', default: 'true', description: 'On a start with no API key in the database, create one key for tenant `default` with the roles `admin` and `monitor` (so it also reads `/metrics`) and print it once.' },
  { name: 'OPENWOP_JWT_SECRET', description: 'HS256 secret for JWT bearer tokens (JWTs are refused when neither this nor a JWKS URL is set).' },
  { name: 'OPENWOP_JWT_JWKS_URL', description: 'JWKS URL for RS256/ES256 JWT bearer tokens from an identity provider.' },
  { name: 'OPENWOP_JWT_ISSUER', description: 'Required `iss` of JWTs (checked when set; required with a JWKS URL).' },
  { name: 'OPENWOP_JWT_AUDIENCE', description: 'Required `aud` of JWTs (checked when set; required with a JWKS URL).' },
  { name: 'OPENWOP_JWT_ALGORITHMS', description: 'Accepted JWT algorithms (default HS256 with a secret, RS256,ES256 with JWKS). `none` is always refused.' },
  { name: 'OPENWOP_JWT_MAX_LIFETIME_S', default: '86400', description: 'Longest lifetime a JWT may grant, in seconds: `exp` is required, and `exp - iat` (or `exp - now` without `iat`) above this is refused (401).' },
  { name: 'OPENWOP_JWT_CLAIM_TENANT', default: 'tenant', description: 'JWT claim holding the tenant.' },
  { name: 'OPENWOP_JWT_CLAIM_WORKSPACE', default: 'workspace', description: 'JWT claim holding the optional workspace.' },
  { name: 'OPENWOP_JWT_CLAIM_PRINCIPAL', default: 'sub', description: 'JWT claim holding the principal id.' },
  { name: 'OPENWOP_JWT_CLAIM_SCOPES', default: 'scope', description: 'JWT claim holding scopes (space-separated string or array).' },
  { name: 'OPENWOP_JWT_CLAIM_ROLES', default: 'roles', description: 'JWT claim holding role names, expanded to their scopes.' },
  { name: 'OPENWOP_CREDENTIAL_KEYS', description: 'Credential encryption keys, `id:base64key[,id:base64key]` (32-byte keys; the first encrypts, all decrypt). Unset: a key is generated once and kept in the data folder (embedded mode only). A malformed value stops the start (`configuration error: ...`) before any database is opened.' },
  { name: 'OPENWOP_INTERRUPT_TOKEN_SECRET', description: 'HMAC-SHA256 secret (at least 32 characters) that signs interrupt resolution tokens (`/v1/interrupts/{token}`); every replica needs the same one. Unset: a random secret is generated once and kept in the database (table `host_secret`).' },
  { name: 'OPENWOP_PROPOSALS_ACTIVATION', default: 'direct-rbac', description: 'How proposals are activated: direct-rbac or approval-gate.' },
  { name: 'OPENWOP_SCHEDULER_TICK_MS', default: '5000', description: 'How often each replica looks for due scheduled work.' },
  { name: 'OPENWOP_SCHEDULER_ENABLED', default: 'true', description: 'Run the scheduler ticker in this replica.' },
  { name: 'OPENWOP_INSTANCE_ID', description: 'Name of this replica in leases and logs (default: hostname and pid).' },
  { name: 'OPENWOP_METRICS', default: 'scope', description: 'Access to GET /metrics (Prometheus): `public` (no credential), `scope` (a credential holding `metrics:read`) or `off` (not served: 404).' },
  { name: 'OPENWOP_RATE_LIMIT_ENABLED', default: 'true', description: 'Rate-limit requests per credential (and per client address where no credential applies). Counters are per replica unless OPENWOP_REDIS_URL names a shared Redis.' },
  { name: 'OPENWOP_RATE_LIMIT_READ', default: '6000/60s', description: 'Budget of each credential for GET/HEAD requests, `<requests>/<window>` (window in ms, s, m or h).' },
  { name: 'OPENWOP_RATE_LIMIT_WRITE', default: '1200/60s', description: 'Budget of each credential for POST, PUT, PATCH and DELETE requests.' },
  { name: 'OPENWOP_RATE_LIMIT_AUTH_FAILURES', default: '60/60s', description: 'Requests refused with 401 allowed per client address; past it the address gets 429 until the window ends.' },
  { name: 'OPENWOP_RATE_LIMIT_PUBLIC', default: '1200/60s', description: 'Budget of each client address on routes that need no credential (discovery, OpenAPI, health, public metrics).' },
  { name: 'OPENWOP_TOOL_SOURCE_TIMEOUT_MS', default: '5000', description: 'Deadline for one tool source to list its tools; a slower source is left out and reported.' },
  { name: 'OPENWOP_CONSOLE', default: 'true', description: 'Serve the operator console (a static web page) at /console.' },
  { name: 'OPENWOP_DB_POOL_SIZE', default: '10', description: 'Database connections of this process (the pool); on a PostgreSQL server with prepared statements on, a second pool of half as many (at least 2) runs the prepared statements of the run engine.' },
  { name: 'OPENWOP_DB_CONNECT_TIMEOUT_MS', default: '5000', description: 'Longest wait for a database connection (connecting, or a free one from the pool); past it the request answers 503 `service_unavailable`.' },
  { name: 'OPENWOP_DB_STATEMENT_TIMEOUT_MS', default: '15000', description: "Longest a statement may run (PostgreSQL `statement_timeout`, and the client's own deadline for a server that stopped answering); past it the request answers 503. 0: no limit. Migrations are exempt." },
  { name: 'OPENWOP_DB_LOCK_TIMEOUT_MS', default: '10000', description: 'Longest a statement waits for a row or table lock (PostgreSQL `lock_timeout`); past it the request answers 503. 0: no limit.' },
  { name: 'OPENWOP_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS', default: '60000', description: 'A connection idle inside an open transaction this long is ended and its transaction rolled back (PostgreSQL `idle_in_transaction_session_timeout`; the embedded engine does the same). 0: never.' },
  { name: 'OPENWOP_DB_PREPARED_STATEMENTS', default: 'true', description: 'Send the hot statements (run creation, the run engine\'s claims and writes, event reads) as named prepared statements, parsed and planned once per connection. Turn off behind a connection pooler that does not keep prepared statements per client (PgBouncer in transaction mode before 1.21). The embedded engine uses them too (its wire server keeps each connection\'s statement names apart on its one backend session).' },
  ...EMBEDDED_ENV_SETTINGS,
  { name: 'OPENWOP_HTTP_HEADERS_TIMEOUT_MS', default: '10000', description: 'A client must send the complete request headers within this time of connecting or of its previous request; otherwise the connection is closed (408).' },
  { name: 'OPENWOP_HTTP_REQUEST_TIMEOUT_MS', default: '30000', description: 'A client must send the complete request (headers and body) within this time; otherwise the connection is closed (408).' },
  { name: 'OPENWOP_HTTP_KEEP_ALIVE_TIMEOUT_MS', default: '72000', description: 'An idle keep-alive connection is closed after this long (keep it above the idle timeout of a load balancer in front).' },
  { name: 'OPENWOP_HTTP_SEND_TIMEOUT_MS', default: '20000', description: 'A client that reads none of a pending response for this long is disconnected (its socket buffer stays full).' },
  ...RETENTION_ENV_SETTINGS,
  { name: 'OPENWOP_FORK_UNINSTALLED_CHAINS', default: 'refuse', description: 'A fork (`POST /v1/runs/{runId}:fork`) that would execute nodes of a chain no longer installed, or of a version of it no longer installed, is refused with 422 `workflow_not_installed`; `allow` lets it run the chain the source run recorded.' },
  { name: 'OPENWOP_ARTIFACT_MAX_BYTES', default: '10485760', description: 'Largest run artifact a node may store (`ctx.artifacts.put`, `core.artifact`), in bytes; a larger one fails the node with `artifact_too_large`.' },
  ...GRPC_ENV_SETTINGS,
  ...ADMISSION_ENV_SETTINGS,
  ...IDENTITY_ENV_SETTINGS,
  ...MCP_MOUNT_ENV_SETTINGS,
  ...WEBHOOK_ENV_SETTINGS,
  ...WORKSPACE_ENV_SETTINGS,
  ...PROTOCOL_ENV_SETTINGS,
  ...SHARED_STORE_ENV_SETTINGS,
  ...OTEL_ENV_SETTINGS,
  ...AUDIT_ENV_SETTINGS,
  ...KEY_ROTATION_ENV_SETTINGS,
  ...FORCE_EXPIRE_ENV_SETTINGS,
];

function bool(env: NodeJS.ProcessEnv, name: string, dflt: boolean): boolean {
  const v = env[name];
  if (v === undefined || v === '') return dflt;
  if (/^(true|1|yes)$/i.test(v)) return true;
  if (/^(false|0|no)$/i.test(v)) return false;
  throw new ConfigError(`${name} must be true or false, got "${v}"`);
}

const WINDOW_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses `<requests>/<window>` (for example `600/1m`, `20/500ms`). */
export function parseRateBudget(name: string, value: string): RateBudget {
  const m = /^\s*(\d{1,9})\s*\/\s*(\d{1,7})(ms|s|m|h)\s*$/.exec(value);
  if (!m) throw new ConfigError(`${name} must look like <requests>/<window>, for example 600/60s (window in ms, s, m or h); got "${value}"`);
  const limit = Number(m[1]);
  const windowMs = Number(m[2]) * WINDOW_UNITS[m[3]];
  if (limit < 1) throw new ConfigError(`${name}: the request budget must be at least 1, got ${limit}`);
  if (windowMs < 100 || windowMs > 86_400_000) throw new ConfigError(`${name}: the window must be between 100ms and 24h, got ${windowMs}ms`);
  return { limit, windowMs };
}

function budget(env: NodeJS.ProcessEnv, name: string, dflt: string): RateBudget {
  return parseRateBudget(name, str(env, name) ?? dflt);
}

function pluginsDir(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const dir = path.resolve(value);
  if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new ConfigError(`OPENWOP_PLUGINS_DIR: ${dir} is not a folder`);
  return dir;
}

function str(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

export function loadConfigFile(file: string | undefined, schemas?: SchemaRegistry): HostConfigFile {
  if (!file) return {};
  // The registry (ajv and every schema) is built here only for a file: `serve` reads its settings before anything else loads.
  schemas ??= (require('../schemas/schema-registry') as typeof import('../schemas/schema-registry')).SchemaRegistry.shared();
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`OPENWOP_CONFIG: cannot read ${file}: ${(e as Error).message}`);
  }
  let parsed: unknown;
  try {
    // The YAML parser is loaded only for a YAML file.
    parsed = /\.ya?ml$/i.test(file) ? (require('yaml') as typeof import('yaml')).parse(text) : JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`OPENWOP_CONFIG: ${file} is not valid ${/\.ya?ml$/i.test(file) ? 'YAML' : 'JSON'}: ${(e as Error).message}`);
  }
  parsed = parsed ?? {};
  const errors = schemas.validate('host-config', parsed);
  if (errors.length) {
    throw new ConfigError(`OPENWOP_CONFIG: ${file} is invalid: ${errors.map((e) => `${e.path || '/'} ${e.message}`).join('; ')}`);
  }
  return parsed as HostConfigFile;
}

export function loadHostConfig(env: NodeJS.ProcessEnv = process.env, schemas?: SchemaRegistry): HostConfig {
  const configFile = str(env, 'OPENWOP_CONFIG');
  const activation = str(env, 'OPENWOP_PROPOSALS_ACTIVATION') ?? 'direct-rbac';
  if (activation !== 'direct-rbac' && activation !== 'approval-gate') {
    throw new ConfigError(`OPENWOP_PROPOSALS_ACTIVATION must be direct-rbac or approval-gate, got "${activation}"`);
  }
  const forkUninstalled = str(env, 'OPENWOP_FORK_UNINSTALLED_CHAINS') ?? 'refuse';
  if (forkUninstalled !== 'refuse' && forkUninstalled !== 'allow') {
    throw new ConfigError(`OPENWOP_FORK_UNINSTALLED_CHAINS must be refuse or allow, got "${forkUninstalled}"`);
  }
  const metrics = str(env, 'OPENWOP_METRICS') ?? 'scope';
  if (metrics !== 'public' && metrics !== 'scope' && metrics !== 'off') {
    throw new ConfigError(`OPENWOP_METRICS must be public, scope or off; got "${metrics}"`);
  }
  const logLevel = str(env, 'LOG_LEVEL') ?? 'info';
  if (!['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent; got "${logLevel}"`);
  }
  const databaseUrl = str(env, 'DATABASE_URL');
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }
  const jwksUrl = str(env, 'OPENWOP_JWT_JWKS_URL');
  const secret = str(env, 'OPENWOP_JWT_SECRET');
  const issuer = str(env, 'OPENWOP_JWT_ISSUER');
  const audience = str(env, 'OPENWOP_JWT_AUDIENCE');
  if (jwksUrl && (!issuer || !audience)) {
    throw new ConfigError('OPENWOP_JWT_JWKS_URL needs OPENWOP_JWT_ISSUER and OPENWOP_JWT_AUDIENCE');
  }
  const algorithms = (str(env, 'OPENWOP_JWT_ALGORITHMS') ?? (jwksUrl ? 'RS256,ES256' : 'HS256'))
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  const allowed = ['HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512'];
  for (const a of algorithms) {
    if (!allowed.includes(a)) throw new ConfigError(`OPENWOP_JWT_ALGORITHMS: unsupported algorithm "${a}"`);
  }
  const prefix = str(env, 'OPENWOP_API_KEY_PREFIX') ?? 'owk_';
  if (!/^[a-z][a-z0-9]{1,15}_$/.test(prefix)) {
    throw new ConfigError('OPENWOP_API_KEY_PREFIX must be 2-16 lowercase letters or digits followed by "_"');
  }
  const host = str(env, 'HOST') ?? '127.0.0.1';
  const testSeams = bool(env, 'OPENWOP_TEST_SEAMS', false);
  // A settings file's own refusal becomes a ConfigError (those files do not import this one).
  const grpc = asConfigError(() => loadGrpcConfig(env, { host, testSeams }), GrpcSettingError);
  const mcpMount = asConfigError(() => loadMcpMountConfig(env), McpMountSettingError);
  const webhooks = asConfigError(() => loadWebhookSettings(env), WebhookSettingError);
  const protocol = asConfigError(() => loadProtocolSettings(env), ProtocolSettingError);
  return {
    port: envInt(env, 'PORT', 8080, 0, 65535),
    host,
    trustProxy: bool(env, 'OPENWOP_TRUST_PROXY', false),
    databaseUrl,
    dataDir: path.resolve(str(env, 'OPENWOP_DATA_DIR') ?? './.data'),
    configFile,
    file: loadConfigFile(configFile, schemas),
    plugins: (str(env, 'OPENWOP_PLUGINS') ?? '').split(',').map((p) => p.trim()).filter(Boolean),
    pluginsDir: pluginsDir(str(env, 'OPENWOP_PLUGINS_DIR')),
    pluginsStrict: bool(env, 'OPENWOP_PLUGINS_STRICT', false),
    testSeams,
    maxRequestBodyBytes: envInt(env, 'OPENWOP_MAX_BODY_BYTES', 1048576, 1024, 1024 * 1024 * 1024),
    json: {
      maxDepth: envInt(env, 'OPENWOP_JSON_MAX_DEPTH', 64, 2, 512),
      maxKeys: envInt(env, 'OPENWOP_JSON_MAX_KEYS', 1000, 1, 1_000_000),
      maxItems: envInt(env, 'OPENWOP_JSON_MAX_ITEMS', 10000, 1, 10_000_000),
      maxStringLength: envInt(env, 'OPENWOP_JSON_MAX_STRING', 262144, 1, 1024 * 1024 * 1024),
    },
    migrateOnStart: bool(env, 'OPENWOP_MIGRATE_ON_START', true),
    logLevel,
    apiKeyPrefix: prefix,
    bootstrapKey: bool(env, 'OPENWOP_BOOTSTRAP_KEY', true),
    keyRecheckMs: envInt(env, 'OPENWOP_KEY_RECHECK_MS', 1000, 50, 5_000),
    keyRotation: loadKeyRotationSettings(env),
    forceExpire: loadForceExpireSettings(env),
    jwt: {
      secret,
      jwksUrl,
      issuer,
      audience,
      algorithms,
      maxLifetimeS: envInt(env, 'OPENWOP_JWT_MAX_LIFETIME_S', 86400, 1, 31_536_000),
      claims: {
        tenant: str(env, 'OPENWOP_JWT_CLAIM_TENANT') ?? 'tenant',
        workspace: str(env, 'OPENWOP_JWT_CLAIM_WORKSPACE') ?? 'workspace',
        principal: str(env, 'OPENWOP_JWT_CLAIM_PRINCIPAL') ?? 'sub',
        scopes: str(env, 'OPENWOP_JWT_CLAIM_SCOPES') ?? 'scope',
        roles: str(env, 'OPENWOP_JWT_CLAIM_ROLES') ?? 'roles',
      },
    },
    credentialKeys: credentialKeys(str(env, 'OPENWOP_CREDENTIAL_KEYS')),
    interruptTokenSecret: interruptSecret(str(env, 'OPENWOP_INTERRUPT_TOKEN_SECRET')),
    proposalsActivation: activation,
    schedulerTickMs: envInt(env, 'OPENWOP_SCHEDULER_TICK_MS', 5000, 10, 3_600_000),
    schedulerEnabled: bool(env, 'OPENWOP_SCHEDULER_ENABLED', true),
    instanceId: str(env, 'OPENWOP_INSTANCE_ID') ?? `${require('node:os').hostname()}:${process.pid}`,
    toolSourceTimeoutMs: envInt(env, 'OPENWOP_TOOL_SOURCE_TIMEOUT_MS', 5000, 10, 600_000),
    metrics,
    rateLimit: {
      enabled: bool(env, 'OPENWOP_RATE_LIMIT_ENABLED', true),
      budgets: {
        read: budget(env, 'OPENWOP_RATE_LIMIT_READ', '6000/60s'),
        write: budget(env, 'OPENWOP_RATE_LIMIT_WRITE', '1200/60s'),
        'auth-failures': budget(env, 'OPENWOP_RATE_LIMIT_AUTH_FAILURES', '60/60s'),
        public: budget(env, 'OPENWOP_RATE_LIMIT_PUBLIC', '1200/60s'),
      },
    },
    sharedStore: loadSharedStoreSettings(env),
    consoleEnabled: bool(env, 'OPENWOP_CONSOLE', true),
    database: {
      poolSize: envInt(env, 'OPENWOP_DB_POOL_SIZE', 10, 1, 1000),
      connectTimeoutMs: envInt(env, 'OPENWOP_DB_CONNECT_TIMEOUT_MS', 5000, 100, 600_000),
      statementTimeoutMs: envInt(env, 'OPENWOP_DB_STATEMENT_TIMEOUT_MS', 15000, 0, 86_400_000),
      lockTimeoutMs: envInt(env, 'OPENWOP_DB_LOCK_TIMEOUT_MS', 10000, 0, 86_400_000),
      idleInTransactionTimeoutMs: envInt(env, 'OPENWOP_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS', 60000, 0, 86_400_000),
      preparedStatements: bool(env, 'OPENWOP_DB_PREPARED_STATEMENTS', true),
    },
    embedded: loadEmbeddedSettings(env),
    http: httpTimeouts(env),
    grpc,
    mcpMount,
    webhooks,
    workspace: loadWorkspaceSettings(env),
    protocol,
    tracing: loadTracingConfig(env),
    otlpMetrics: loadOtlpMetricsConfig(env),
    audit: loadAuditSettings(env, { allowPrivate: webhooks.allowPrivate, allowedPorts: webhooks.allowedPorts }),
    retention: loadRetentionSettings(env),
    admission: loadAdmissionSettings(env),
    identity: loadIdentitySettings(env),
    artifacts: { maxBytes: envInt(env, 'OPENWOP_ARTIFACT_MAX_BYTES', 10_485_760, 1, 1_073_741_824) },
    forkUninstalledChains: forkUninstalled,
  };
}

function asConfigError<T>(load: () => T, refusal: new (...args: never[]) => Error): T {
  try {
    return load();
  } catch (e) {
    if (e instanceof refusal) throw new ConfigError(e.message);
    throw e;
  }
}

function httpTimeouts(env: NodeJS.ProcessEnv): HttpTimeouts {
  const t: HttpTimeouts = {
    headersTimeoutMs: envInt(env, 'OPENWOP_HTTP_HEADERS_TIMEOUT_MS', 10000, 100, 3_600_000),
    requestTimeoutMs: envInt(env, 'OPENWOP_HTTP_REQUEST_TIMEOUT_MS', 30000, 100, 3_600_000),
    keepAliveTimeoutMs: envInt(env, 'OPENWOP_HTTP_KEEP_ALIVE_TIMEOUT_MS', 72000, 100, 3_600_000),
    sendTimeoutMs: envInt(env, 'OPENWOP_HTTP_SEND_TIMEOUT_MS', 20000, 1000, 3_600_000),
  };
  // Node refuses a headers deadline later than the whole request's.
  if (t.headersTimeoutMs > t.requestTimeoutMs) {
    throw new ConfigError(`OPENWOP_HTTP_HEADERS_TIMEOUT_MS (${t.headersTimeoutMs}) must not exceed OPENWOP_HTTP_REQUEST_TIMEOUT_MS (${t.requestTimeoutMs})`);
  }
  return t;
}

/** OPENWOP_CREDENTIAL_KEYS, checked here so a malformed keyring stops the start before any database is opened. */
function credentialKeys(v: string | undefined): string {
  if (v === undefined) return '';
  try {
    if (!parseKeyring(v).length) throw new KeyringError('OPENWOP_CREDENTIAL_KEYS is set but holds no key (id:base64key[,id:base64key])');
  } catch (e) {
    if (e instanceof KeyringError) throw new ConfigError(e.message);
    throw e;
  }
  return v;
}

function interruptSecret(v: string | undefined): string | undefined {
  if (v !== undefined && v.length < 32) throw new ConfigError('OPENWOP_INTERRUPT_TOKEN_SECRET must be at least 32 characters');
  return v;
}
