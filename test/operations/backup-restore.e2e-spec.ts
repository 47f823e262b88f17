/**
 * Backup and restore on a PostgreSQL server, as docs/operations.md#backup-and-restore tells an
 * operator to do it: `pg_dump --format=custom` of the live database, `pg_restore` into a fresh
 * database, a host booted on the copy. The copy serves the old run (with the old API key), verifies
 * the old audit chain and its signed checkpoints under the same checkpoint key, and the chain goes on
 * from where it was. Needs PostgreSQL's client programs (Debian's postgresql-client) no older than the
 * server; without them, or on the embedded engine (no server to dump), the test is skipped and says why.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain, runEvents, waitForStatus } from '../runs/run-kit';

const TOOLS = ['pg_dump', 'pg_restore', 'psql'];

function toolMajor(tool: string): number | undefined {
  const r = spawnSync(tool, ['--version'], { encoding: 'utf8' });
  const m = r.status === 0 ? /(\d+)(\.\d+)?/.exec(r.stdout) : null;
  return m ? Number(m[1]) : undefined;
}

/** Why the round trip cannot run here, or undefined when it can (decided before the tests are collected). */
function skipReason(): string | undefined {
  if (process.env.OPENWOP_TEST_DB_MODE === 'embedded') return 'the tests run on the embedded engine: no PostgreSQL server to dump (its folder copy is test/operations/backup-restore-embedded.e2e-spec.ts)';
  const missing = TOOLS.filter((t) => toolMajor(t) === undefined);
  if (missing.length) return `${missing.join(', ')} not installed (Debian package postgresql-client; .ci/run installs it)`;
  const version = spawnSync('psql', [`--dbname=${process.env.DATABASE_URL}`, '--no-align', '--tuples-only', '--command', 'SHOW server_version_num'], { encoding: 'utf8' });
  if (version.status !== 0) return `psql cannot reach the test server: ${version.stderr.trim()}`;
  const server = Math.floor(Number(version.stdout.trim()) / 10000);
  const client = toolMajor('pg_dump')!;
  return client < server ? `pg_dump ${client} cannot dump a PostgreSQL ${server} server (install postgresql-client-${server})` : undefined;
}

const reason = skipReason();
if (reason) process.stderr.write(`backup and restore round trip skipped: ${reason}\n`);
const roundTrip = reason ? it.skip : it;

function run(tool: string, args: string[]): string {
  const r = spawnSync(tool, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${tool} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

const withDatabase = (url: string, db: string) => {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
};

describe('backup and restore on a PostgreSQL server', () => {
  let source: TestApp | undefined;
  let restored: TestApp | undefined;
  const copy = `owr_${randomBytes(6).toString('hex')}`;
  let dir: string | undefined;

  afterAll(async () => {
    await restored?.close();
    await source?.close();
    if (!reason) {
      const c = new Client({ connectionString: process.env.DATABASE_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${copy}" WITH (FORCE)`);
      await c.end();
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  roundTrip(`pg_dump of the live database, pg_restore into a fresh one: the host on the copy serves the old run and verifies the audit chain${reason ? ` (skipped: ${reason})` : ''}`, async () => {
    // The source: a completed run and audit entries with signed checkpoints (one every 2 entries).
    source = await createTestApp({ env: { OPENWOP_AUDIT_CHECKPOINT_INTERVAL: '2' } });
    const admin = await source.key({ tenant: 'backup', principal: 'ops', roles: ['admin'] });
    for (const p of ['bot-1', 'bot-2']) expect((await source.http('POST', '/v1/keys', { token: admin, body: { principal: p, scopes: ['runs:read'] } })).status).toBe(201);
    await installChains(source, 'backup', 'vendor.test.backup', { 'vendor.test.backup-chain': noopChain(3) });
    const created = await source.http('POST', '/v1/runs', { token: admin, body: { workflowId: 'vendor.test.backup-chain', inputs: { n: 1 } } });
    expect(created.status).toBe(201);
    const runId = created.body.runId as string;
    const before = await waitForStatus(source, admin, runId, ['completed']);
    const eventsBefore = await runEvents(source, admin, runId);
    const verifyBefore = await source.http('GET', '/v1/audit/verify', { token: admin });
    expect(verifyBefore.body).toMatchObject({ chainValid: true, checkpointsValid: true, anomalies: [] });
    expect(verifyBefore.body.checkpoints.length).toBeGreaterThanOrEqual(2);
    const pubKey = (await source.http('GET', '/.well-known/openwop')).body.auth.auditLogIntegrity.checkpointPublicKey as string;

    // Backup while the host runs (pg_dump reads one consistent snapshot), restore into a fresh database.
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-backup-'));
    const dump = path.join(dir, 'openwop.dump');
    const sourceUrl = withDatabase(process.env.DATABASE_URL!, source.databaseName);
    run('pg_dump', ['--format=custom', '--no-owner', '--no-privileges', `--file=${dump}`, `--dbname=${sourceUrl}`]);
    run('psql', [`--dbname=${process.env.DATABASE_URL}`, '--quiet', '--command', `CREATE DATABASE "${copy}"`]);
    run('pg_restore', ['--no-owner', '--no-privileges', '--exit-on-error', '--single-transaction', `--dbname=${withDatabase(process.env.DATABASE_URL!, copy)}`, dump]);
    await source.close();
    source = undefined;

    // The host on the copy: nothing to migrate, the old key works, the old run is there as it was.
    restored = await createTestApp({ database: copy, env: { OPENWOP_AUDIT_CHECKPOINT_INTERVAL: '2' } });
    expect(restored.logs.some((l) => l.includes('migrations applied'))).toBe(false);
    expect((await restored.http('GET', '/readyz')).status).toBe(200);
    const after = await restored.http('GET', `/v1/runs/${runId}`, { token: admin });
    expect(after.status).toBe(200);
    expect(after.body).toEqual(before);
    expect(await runEvents(restored, admin, runId)).toEqual(eventsBefore);

    // The audit chain verifies on the copy, with the same checkpoints under the same key, and goes on.
    expect((await restored.http('GET', '/.well-known/openwop')).body.auth.auditLogIntegrity.checkpointPublicKey).toBe(pubKey);
    const verifyAfter = await restored.http('GET', '/v1/audit/verify', { token: admin });
    expect(verifyAfter.status).toBe(200);
    expect(verifyAfter.body).toEqual(verifyBefore.body);
    expect((await restored.http('POST', '/v1/keys', { token: admin, body: { principal: 'bot-3', scopes: ['runs:read'] } })).status).toBe(201);
    const entries = (await restored.ds.query(`SELECT "seq" FROM "audit_entry" WHERE "tenant" = 'backup' ORDER BY "seq"`)) as Array<{ seq: string }>;
    expect(entries.map((e) => Number(e.seq))).toEqual([1, 2, 3, 4]);
    const verifyNext = await restored.http('GET', '/v1/audit/verify', { token: admin });
    expect(verifyNext.body).toMatchObject({ chainValid: true, checkpointsValid: true, anomalies: [] });
  });
});
