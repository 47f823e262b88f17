/**
 * A host loads the heavy libraries of its optional features only when the feature is on: `serve`
 * with the defaults (no gRPC port, no MCP server, no SAML, no JWT or identity-provider lanes, no
 * shared Redis store, a JSON config, no cron schedule, no author schema with a pattern, no /metrics
 * read) answers requests, DTO validation included, without loading any of them, and the same check
 * sees gRPC's once its port is on. Checked on the real command line, whose loaded modules a
 * preloaded probe reports at exit.
 */
import { execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createScratchDatabase } from '../support/scratch-db';
import { tempDirs } from '../support/temp-dirs';

const ROOT = path.join(__dirname, '../..');
const BIN = path.join(ROOT, 'bin/openwop-host.js');
const PRELOAD = path.join(__dirname, '../support/report-loaded-modules.js');
const NM = `${path.sep}node_modules${path.sep}`;

/** What each optional feature loads, by the path of a module it brings in. */
const OPTIONAL: Record<string, string[]> = {
  'MCP SDKs (an MCP connection or an MRTR call)': ['@modelcontextprotocol', 'zod'],
  'gRPC (OPENWOP_GRPC_PORT)': ['@grpc', 'protobufjs', 'grpc-health-check'],
  'SAML': ['@node-saml', 'xml2js', 'xml-crypto', 'xmlbuilder'],
  'JWT, JWKS and identity-provider lanes': ['jwks-rsa', 'jose', 'passport-jwt', 'jsonwebtoken'],
  'the shared Redis store': ['ioredis'],
  'a YAML config file': ['yaml'],
  'cron schedules': ['cron-parser'],
  'author-schema patterns (the linear-time engine)': ['re2js'],
  'the portability commands': ['cli-progress'],
  // The DTOs' decorators come from their own files; the index loads every validator.
  'class-validator’s index': ['libphonenumber-js', `class-validator${path.sep}cjs${path.sep}index.js`],
  // The metric classes come from their own files; the index (default process metrics) loads with /metrics.
  'prom-client’s index': [`prom-client${path.sep}index.js`],
};

const temp = tempDirs();

function optionalIn(loaded: string[]): Record<string, string[]> {
  const found: Record<string, string[]> = {};
  for (const [feature, marks] of Object.entries(OPTIONAL)) {
    const hits = loaded.filter((m) => marks.some((mark) => m.includes(`${NM}${mark}${mark.endsWith('.js') ? '' : path.sep}`)));
    if (hits.length) found[feature] = hits.slice(0, 3);
  }
  return found;
}

function env(db: string, reportFile: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: db,
    LOG_LEVEL: 'info',
    OPENWOP_SCHEDULER_ENABLED: 'false',
    OPENWOP_BOOTSTRAP_KEY: 'false',
    HOST: '127.0.0.1',
    PORT: '0',
    OPENWOP_DATA_DIR: temp.make('openwop-optional-'),
    NODE_OPTIONS: `--require ${PRELOAD}`,
    OPENWOP_TEST_MODULES_REPORT: reportFile,
    OPENWOP_TEST_MODULES_MATCH: NM,
    ...extra,
  };
  for (const k of ['OPENWOP_CONFIG', 'OPENWOP_REDIS_URL', 'OPENWOP_JWT_SECRET', 'OPENWOP_JWT_JWKS_URL', 'OPENWOP_GRPC_PORT', 'OPENWOP_TEST_SEAMS', 'OTEL_TRACES_EXPORTER', 'OTEL_METRICS_EXPORTER']) if (!(k in extra)) delete e[k];
  return e;
}

/** `openwop-host keys create` on the database (migrating it first), then `serve`; `use` runs against the listening host. */
async function serveAndUse(extra: Record<string, string>, use: (base: string, key: string) => Promise<void>): Promise<string[]> {
  const db = await createScratchDatabase();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-optional-report-'));
  const report = path.join(dir, 'loaded.txt');
  try {
    const minted = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [BIN, 'keys', 'create', '--tenant', 'default', '--principal', 'tester', '--role', 'admin', '--json'], { env: env(db.url, path.join(dir, 'keys.txt')), timeout: 120_000 }, (err, stdout, stderr) => (err ? reject(new Error(`keys create failed: ${stderr}`)) : resolve(stdout))),
    );
    const { key } = JSON.parse(minted) as { key: string };
    const child = spawn(process.execPath, [BIN, 'serve'], { env: env(db.url, report, extra), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (c) => (out += String(c)));
    child.stderr!.on('data', (c) => (out += String(c)));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const listening = await new Promise<{ url: string }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`serve did not listen:\n${out}`)), 120_000);
        const look = () => {
          const line = out.split('\n').find((l) => l.includes('"openwop host listening"'));
          if (line) {
            clearTimeout(timer);
            resolve(JSON.parse(line) as { url: string });
          } else if (child.exitCode !== null) {
            clearTimeout(timer);
            reject(new Error(`serve exited with ${child.exitCode}:\n${out}`));
          } else setTimeout(look, 50);
        };
        look();
      });
      await use(listening.url, key);
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
    return fs.readFileSync(report, 'utf8').split('\n').filter(Boolean);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    await db.drop();
  }
}

async function call(base: string, key: string, method: string, url: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}${url}`, { method, headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, body: body !== undefined ? JSON.stringify(body) : undefined });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('optional features load their libraries only when they are on', () => {
  it('serve with the defaults answers requests, validation included, without loading any of them', async () => {
    const loaded = await serveAndUse({}, async (base, key) => {
      expect((await call(base, key, 'GET', '/.well-known/openwop')).status).toBe(200);
      expect((await call(base, key, 'GET', '/v1/runs?limit=2')).status).toBe(200);
      // A body the DTO refuses: the validation pipe ran.
      const refused = await call(base, key, 'POST', '/v1/runs', { workflowId: 42 });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe('validation_error');
    });
    // The probe saw the host's libraries (the check below is not vacuous)...
    expect(loaded.some((m) => m.includes(`${NM}@nestjs${path.sep}core${path.sep}`))).toBe(true);
    expect(loaded.some((m) => m.includes(`${NM}class-validator${path.sep}`))).toBe(true);
    // ...and none of the optional ones.
    expect(optionalIn(loaded)).toEqual({});
  }, 300_000);

  it('loads gRPC’s libraries once its port is on (the same check sees them)', async () => {
    const loaded = await serveAndUse({ OPENWOP_GRPC_PORT: '0', OPENWOP_GRPC_HOST: '127.0.0.1' }, async (base, key) => {
      expect((await call(base, key, 'GET', '/.well-known/openwop')).status).toBe(200);
    });
    const found = optionalIn(loaded);
    expect(Object.keys(found)).toEqual(['gRPC (OPENWOP_GRPC_PORT)']);
    expect(found['gRPC (OPENWOP_GRPC_PORT)'].some((m) => m.includes(`${NM}@grpc${path.sep}grpc-js${path.sep}`))).toBe(true);
  }, 300_000);
});
