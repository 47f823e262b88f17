import { execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { createScratchDatabase } from '../support/scratch-db';

const run = promisify(execFile);
const root = path.join(__dirname, '..', '..');
const bin = (name: string) => path.join(root, 'node_modules', '.bin', name);

/** Every file under `dir` (relative path → content). */
function tree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const f = path.join(d, e.name);
      if (e.isDirectory()) walk(f);
      else out.set(path.relative(dir, f), fs.readFileSync(f, 'utf8'));
    }
  };
  walk(dir);
  return out;
}

/**
 * nest-cli.json at the top level: the Nest CLI (`nest start`, which compiles as `nest build` does) compiles
 * exactly what `npm run build` compiles, and runs the host from that build.
 */
describe('the Nest CLI', () => {
  const nestCli = JSON.parse(fs.readFileSync(path.join(root, 'nest-cli.json'), 'utf8')) as {
    sourceRoot: string;
    entryFile: string;
    compilerOptions: { tsConfigPath: string; builder: string };
  };
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string>; devDependencies: Record<string, string> };

  it('is configured at the top level with the build tsconfig of `npm run build`, and pinned as a dev dependency', () => {
    expect(pkg.devDependencies['@nestjs/cli']).toMatch(/^\d+\.\d+\.\d+$/);
    expect(pkg.scripts.build).toBe(`tsc -p ${nestCli.compilerOptions.tsConfigPath}`);
    expect(nestCli.compilerOptions.builder).toBe('tsc');
    expect(fs.existsSync(path.join(root, nestCli.sourceRoot, `${nestCli.entryFile}.ts`))).toBe(true);
  });

  it('`nest start` builds what `npm run build` builds, byte for byte, and serves the host from it (ready on /readyz)', async () => {
    // The Nest CLI's build and `npm run build` write to temporary folders: a tsconfig that extends the one
    // nest-cli.json names and only moves outDir, and a copy of nest-cli.json pointing at it. They sit inside
    // the project (test/.tmp is ignored by git) so type roots resolve as in the real build; the Nest CLI takes
    // project-relative paths. `nest start` compiles exactly as `nest build` does (then runs the entry file),
    // so one compile of each side covers both commands.
    fs.mkdirSync(path.join(root, 'test', '.tmp'), { recursive: true });
    const work = fs.mkdtempSync(path.join(root, 'test', '.tmp', 'nest-build-'));
    const tsconfig = (out: string) => {
      const file = path.join(work, `tsconfig.${out}.json`);
      fs.writeFileSync(file, JSON.stringify({ extends: path.join(root, nestCli.compilerOptions.tsConfigPath), compilerOptions: { outDir: path.join(work, out) } }));
      return path.relative(root, file);
    };
    const nestConfig = path.join(work, 'nest-cli.json');
    fs.writeFileSync(nestConfig, JSON.stringify({ ...nestCli, compilerOptions: { ...nestCli.compilerOptions, tsConfigPath: tsconfig('nest') } }));
    const db = await createScratchDatabase();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-nest-start-'));
    const child = spawn(bin('nest'), ['start', '-c', path.relative(root, nestConfig)], {
      cwd: root,
      detached: true, // its own process group: nest start runs the host as a child process
      env: { ...process.env, DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', OPENWOP_DATA_DIR: dataDir, OPENWOP_BOOTSTRAP_KEY: 'false', OPENWOP_SCHEDULER_ENABLED: 'false', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d) => (out += String(d)));
    child.stderr!.on('data', (d) => (out += String(d)));
    try {
      const byTscBuild = run(bin('tsc'), ['-p', path.join(root, tsconfig('tsc'))], { cwd: root, timeout: 180_000 });
      // Awaited below; a failure of `nest start` first must not leave its rejection unheard.
      byTscBuild.catch(() => undefined);
      let url = '';
      const deadline = Date.now() + 200_000;
      while (!url && Date.now() < deadline && child.exitCode === null) {
        await new Promise((r) => setTimeout(r, 250));
        url = /"url":"(http:\/\/[^"]+)","database"/.exec(out)?.[1] ?? '';
      }
      if (!url) throw new Error(`nest start did not serve:\n${out.slice(-3000)}`);
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).toBe(200);
      expect((await fetch(`${url}/.well-known/openwop`)).status).toBe(200);
      await byTscBuild;
      const byTsc = tree(path.join(work, 'tsc'));
      const byNest = tree(path.join(work, 'nest'));
      expect(byTsc.size).toBeGreaterThan(100);
      expect(byTsc.has(path.join('src', `${nestCli.entryFile}.js`))).toBe(true);
      expect([...byNest.keys()].sort()).toEqual([...byTsc.keys()].sort());
      const differing = [...byTsc].filter(([f, text]) => byNest.get(f) !== text).map(([f]) => f);
      expect(differing).toEqual([]);
    } finally {
      if (child.exitCode === null && child.pid) {
        process.kill(-child.pid, 'SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      await db.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
      fs.rmSync(work, { recursive: true, force: true });
    }
  }, 300_000);
});
