import { ChildProcess, execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BIN = path.join(__dirname, '../../bin/openwop-host.js');

/**
 * The README promise without a database server: `openwop-host serve` on the embedded PostgreSQL,
 * a bootstrap admin key printed once, and the CLI managing keys while the host runs (through the
 * socket in the data folder) and after it stopped (opening the files itself).
 */
describe('openwop-host on the embedded database', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-embedded-'));
  const env: NodeJS.ProcessEnv = { ...process.env, OPENWOP_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info', OPENWOP_SCHEDULER_TICK_MS: '60000' };
  delete env.DATABASE_URL;
  let host: ChildProcess;
  let stdout = '';
  let baseUrl = '';
  let bootstrapKey = '';

  const cli = async (...args: string[]) => (await run(process.execPath, [BIN, ...args], { env, timeout: 90_000 })).stdout;

  beforeAll(async () => {
    host = spawn(process.execPath, [BIN, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    host.stdout!.on('data', (d) => (stdout += String(d)));
    host.stderr!.on('data', (d) => (stdout += String(d)));
    // A first start creates the database (initdb): on a busy machine that alone can take a minute.
    const deadline = Date.now() + 150_000;
    while (Date.now() < deadline && !(baseUrl && bootstrapKey)) {
      await new Promise((r) => setTimeout(r, 200));
      baseUrl ||= /"url":"(http:\/\/[^"]+)"/.exec(stdout)?.[1] ?? '';
      bootstrapKey ||= /^\s+(owk_\S+)$/m.exec(stdout)?.[1] ?? '';
      if (host.exitCode !== null) break;
    }
    if (!baseUrl || !bootstrapKey) throw new Error(`host did not start:\n${stdout}`);
  }, 180_000);

  afterAll(async () => {
    if (host.exitCode === null) {
      host.kill('SIGTERM');
      await new Promise((r) => host.once('exit', r));
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('prints a first admin key with a curl line, and the key works', async () => {
    expect(stdout).toContain('shown only this once');
    expect(stdout).toContain(`curl -s -H "Authorization: Bearer ${bootstrapKey}"`);
    const discovery = await fetch(`${baseUrl}/.well-known/openwop`);
    expect(discovery.status).toBe(200);
    const poll = await fetch(`${baseUrl}/v1/runs/host/events/poll`, { headers: { authorization: `Bearer ${bootstrapKey}` } });
    expect(poll.status).toBe(200);
    expect((await fetch(`${baseUrl}/v1/runs/host/events/poll`)).status).toBe(401);
    // The operator's first key also reads the host-wide metrics (role monitor), and the banner's key command is the README's.
    const metrics = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${bootstrapKey}` } });
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('openwop_http_requests_total');
    expect(stdout).toContain(`curl -s -H "Authorization: Bearer ${bootstrapKey}" ${baseUrl}/metrics`);
    const readme = fs.readFileSync(path.join(__dirname, '../../README.md'), 'utf8');
    const command = /^Manage keys with: (npx openwop-host keys create .*)$/m.exec(stdout)?.[1];
    expect(command).toBe('npx openwop-host keys create --tenant default --principal me --role admin');
    expect(readme).toContain(command);
    // The key is never written to the structured log.
    const logLines = stdout.split('\n').filter((l) => l.startsWith('{'));
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.some((l) => l.includes(bootstrapKey))).toBe(false);
  });

  it('manages keys from the CLI while the host runs', async () => {
    const created = JSON.parse(await cli('keys', 'create', '--tenant', 'acme', '--principal', 'ci-bot', '--scopes', 'runs:read', '--json')) as { key: string; id: string };
    expect(created.key).toMatch(/^owk_/);
    const ok = await fetch(`${baseUrl}/v1/runs/host/events/poll`, { headers: { authorization: `Bearer ${created.key}` } });
    expect(ok.status).toBe(200);
    const listed = JSON.parse(await cli('keys', 'list', '--tenant', 'acme', '--json')) as Array<{ id: string }>;
    expect(listed.map((k) => k.id)).toEqual([created.id]);
    expect(await cli('keys', 'revoke', created.id)).toContain('revoked');
    // Revocation is seen by the running host once its short verification cache expires.
    await new Promise((r) => setTimeout(r, 5_500));
    const refused = await fetch(`${baseUrl}/v1/runs/host/events/poll`, { headers: { authorization: `Bearer ${created.key}` } });
    expect(refused.status).toBe(401);
    expect(await cli('migrate', 'status')).toMatch(/^applied\s+Platform/m);
  }, 120_000);

  it('stops gracefully on SIGTERM, and the CLI then opens the database itself', async () => {
    host.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => host.once('exit', r));
    expect(code).toBe(0);
    const listed = JSON.parse(await cli('keys', 'list', '--tenant', 'default', '--json')) as Array<{ principal: string }>;
    expect(listed.map((k) => k.principal)).toEqual(['admin']);
  }, 120_000);

  it('refuses invalid configuration with a clear message', async () => {
    await expect(run(process.execPath, [BIN, 'migrate', 'status'], { env: { ...env, PORT: 'eighty' } })).rejects.toMatchObject({
      stderr: expect.stringContaining('PORT must be a whole number'),
    });
    await expect(cli('keys', 'create', '--tenant', 'x', '--principal', 'y')).rejects.toMatchObject({ stderr: expect.stringContaining('--scopes or --role') });
  }, 60_000);
});
