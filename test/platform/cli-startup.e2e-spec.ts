import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '../..');
const BIN = path.join(ROOT, 'bin/openwop-host.js');

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
  /** Every module file the process loaded. */
  modules: string[];
}

/**
 * Runs the real command line (bin/openwop-host.js) with a probe preloaded that writes, when the
 * process exits, the list of modules it loaded.
 */
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Outcome> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-cli-'));
  const probe = path.join(dir, 'probe.js');
  const out = path.join(dir, 'modules.json');
  fs.writeFileSync(probe, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify(Object.keys(require.cache))));\n`);
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  delete childEnv.OPENWOP_API_KEY;
  delete childEnv.OPENWOP_HOST_URL;
  Object.assign(childEnv, env, { NODE_OPTIONS: `--require ${probe}` });
  const started = process.hrtime.bigint();
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: childEnv, timeout: 60_000 }, (error, stdout, stderr) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const modules = fs.existsSync(out) ? (JSON.parse(fs.readFileSync(out, 'utf8')) as string[]) : [];
      fs.rmSync(dir, { recursive: true, force: true });
      resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr, ms, modules });
    });
  });
}

/** What only the host needs: none of it may load to print help or refuse arguments. */
const HEAVY = [/node_modules\/@nestjs\//, /node_modules\/typeorm\//, /node_modules\/typescript\//, /node_modules\/pg\//, /node_modules\/fastify\//, /[\\/]src[\\/]app\.module\.ts$/, /[\\/]src[\\/]bootstrap\.ts$/];
const heavyIn = (modules: string[]) => modules.filter((m) => HEAVY.some((h) => h.test(m)));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

describe('the command line answers at once', () => {
  it('prints --help, and each group’s help, without loading the host', async () => {
    const top = await cli(['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/Usage: openwop-host/);
    for (const group of ['serve', 'migrate', 'keys', 'runs', 'approvals']) expect(top.stdout).toContain(group);
    expect(top.modules.length).toBeGreaterThan(0);
    expect(heavyIn(top.modules)).toEqual([]);
    const approvals = await cli(['approvals', '--help']);
    expect(approvals.stdout).toMatch(/list[\s\S]*grant[\s\S]*deny/);
    expect(heavyIn(approvals.modules)).toEqual([]);
  });

  it('loads the host when a command needs it (the probe sees what it would have to refuse)', async () => {
    const doc = await cli(['openapi']);
    expect(doc.code).toBe(0);
    expect(JSON.parse(doc.stdout).openapi).toMatch(/^3\.1/);
    expect(heavyIn(doc.modules).some((m) => /app\.module\.ts$/.test(m))).toBe(true);
  }, 120_000);

  it('refuses malformed arguments without loading the host', async () => {
    const missing = await cli(['keys', 'create', '--principal', 'p', '--role', 'admin']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/--tenant/);
    const role = await cli(['keys', 'create', '--tenant', 't', '--principal', 'p', '--role', 'emperor']);
    expect(role.code).toBe(1);
    expect(role.stderr).toMatch(/^error: unknown role "emperor"; roles: [^\n]*admin[^\n]*\n$/);
    const neither = await cli(['keys', 'create', '--tenant', 't', '--principal', 'p']);
    expect(neither.code).toBe(1);
    expect(neither.stderr).toMatch(/give --scopes or --role/);
    const limit = await cli(['runs', '--key', 'k', 'list', '--limit', '0']);
    expect(limit.code).toBe(1);
    expect(limit.stderr).toMatch(/1 to 200/);
    for (const o of [missing, role, neither, limit]) expect(heavyIn(o.modules)).toEqual([]);
  });

  it('answers --help and argument errors in well under a second (median of 3)', async () => {
    const help: number[] = [];
    const refused: number[] = [];
    for (let i = 0; i < 3; i++) {
      help.push((await cli(['--help'])).ms);
      refused.push((await cli(['runs', 'list'])).ms);
    }
    // Under 1 s; on a machine oversubscribed more than four times over (shared CI runners), under 2 s, still
    // far below what loading the host costs there (4-8 s measured at that load).
    const load = os.loadavg()[0] / os.cpus().length;
    const bound = load > 4 ? 2000 : 1000;
    process.stderr.write(`openwop-host --help: ${help.map((m) => m.toFixed(0)).join(', ')} ms; runs list without a key: ${refused.map((m) => m.toFixed(0)).join(', ')} ms (load ${load.toFixed(1)} per core, bound ${bound} ms)\n`);
    expect(median(help)).toBeLessThan(bound);
    expect(median(refused)).toBeLessThan(bound);
  });

  it('reports a missing API key of a client command before any connection attempt', async () => {
    let connections = 0;
    const server = net.createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    try {
      for (const args of [['runs', '--url', url, 'list'], ['runs', '--url', url, 'start', 'some.chain', '--follow'], ['approvals', '--url', url, 'list'], ['approvals', '--url', url, 'grant', 'x']]) {
        const o = await cli(args);
        expect(o.code).toBe(1);
        expect(o.stderr).toBe('error: give --key or set OPENWOP_API_KEY\n');
        expect(heavyIn(o.modules)).toEqual([]);
      }
      expect(connections).toBe(0);
      const bad = await cli(['runs', '--url', 'ftp://x', '--key', 'k', 'list']);
      expect(bad.stderr).toMatch(/--url must be an http\(s\) URL/);
      // The counter works: with a key, the same command does connect, and a dropped connection is a
      // failure, never a silent success.
      const keyed = await cli(['runs', '--url', url, 'list'], { OPENWOP_API_KEY: 'owk_test' });
      expect(keyed.code).toBe(1);
      expect(keyed.stderr).toMatch(new RegExp(`^error: (no answer from the host at ${url} |the command ended without an answer)`));
      expect(connections).toBeGreaterThan(0);
    } finally {
      server.close();
    }
  });

  it('prints the package version with --version, without loading the host', async () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const o = await cli([flag]);
      expect(o.code).toBe(0);
      expect(o.stdout).toBe(`${version}\n`);
      expect(heavyIn(o.modules)).toEqual([]);
    }
  });

  it('names the URL it tried, and how to set it, when nothing listens there', async () => {
    // A port nobody listens on: taken, then freed.
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const url = `http://127.0.0.1:${port}`;
    const cases: Array<{ args: string[]; env: NodeJS.ProcessEnv; from: string }> = [
      { args: ['runs', 'list'], env: { PORT: String(port) }, from: 'the default; neither --url nor OPENWOP_HOST_URL is set' },
      { args: ['runs', 'list'], env: { OPENWOP_HOST_URL: url }, from: 'from OPENWOP_HOST_URL' },
      { args: ['runs', '--url', url, 'follow', '00000000-0000-4000-8000-000000000000'], env: {}, from: 'from --url' },
      { args: ['runs', '--url', url, 'start', 'some.chain', '--follow'], env: {}, from: 'from --url' },
      { args: ['approvals', '--url', `${url}/`, 'grant', 'x'], env: {}, from: 'from --url' },
      { args: ['packs', '--url', url, 'install', path.join(ROOT, 'examples/packs')], env: {}, from: 'from --url' },
      { args: ['audit', '--url', url, 'verify'], env: {}, from: 'from --url' },
    ];
    for (const c of cases) {
      const o = await cli(c.args, { OPENWOP_API_KEY: 'owk_test', ...c.env });
      expect(o.code).toBe(1);
      expect(o.stderr).toBe(`error: no answer from the host at ${url} (connection refused; ${c.from}): is it running? Give its URL with --url (before the subcommand) or OPENWOP_HOST_URL\n`);
      expect(o.ms).toBeLessThan(20_000);
    }
  }, 120_000);
});
