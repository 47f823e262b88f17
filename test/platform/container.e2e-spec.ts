import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import * as semver from 'semver';
import YAML from 'yaml';
import { createScratchDatabase } from '../support/scratch-db';

/**
 * There is no container engine here, so the Dockerfile is checked by building it the way the engine
 * would, in clean temporary folders: the context is the checkout (git's files) minus .dockerignore; each
 * stage gets its own empty filesystem; COPY copies from the context or another stage; RUN runs in the
 * stage's WORKDIR with the stage's ENV/ARG (npm installs from the local npm cache, which plays the part
 * of the `--mount=type=cache` build cache; the build stage's full install is a cached layer, see
 * `cachedInstall`). A missing file, an ignored file the build needs or a
 * failing step fails the test. The runtime stage is then started with its CMD and probed with its
 * HEALTHCHECK, so a production dependency missing from `npm ci --omit=dev` fails too.
 */

const run = promisify(execFile);
const root = path.join(__dirname, '..', '..');

interface Instruction {
  op: string;
  args: string;
  line: number;
}

function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i];
    if (/^\s*(#|$)/.test(line)) continue;
    while (/\\\s*$/.test(line) && i + 1 < lines.length) {
      line = line.replace(/\\\s*$/, ' ') + lines[++i].trim();
    }
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!m) throw new Error(`Dockerfile line ${start + 1}: cannot parse "${line}"`);
    out.push({ op: m[1].toUpperCase(), args: m[2].trim(), line: start + 1 });
  }
  return out;
}

/** `--name=value` flags at the start of an instruction's arguments. */
function flags(args: string): { flags: Record<string, string>; rest: string } {
  const f: Record<string, string> = {};
  let rest = args;
  for (let m = /^--([a-z-]+)=(\S+)\s+/.exec(rest); m; m = /^--([a-z-]+)=(\S+)\s+/.exec(rest)) {
    f[m[1]] = m[2];
    rest = rest.slice(m[0].length);
  }
  return { flags: f, rest };
}

/** `KEY=value KEY2="v 2"` pairs (ENV, ARG). */
function pairs(args: string): Array<[string, string | undefined]> {
  const out: Array<[string, string | undefined]> = [];
  const re = /([A-Za-z_][A-Za-z0-9_]*)(?:=("(?:[^"\\]|\\.)*"|\S*))?/g;
  for (let m = re.exec(args); m; m = re.exec(args)) out.push([m[1], m[2] === undefined ? undefined : m[2].replace(/^"(.*)"$/, '$1')]);
  return out;
}

const expand = (s: string, vars: Record<string, string>) => s.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (_m, a, b) => vars[a ?? b] ?? '');

/** .dockerignore semantics: patterns anchored at the context root, `**` any depth, `!` re-includes, a matched folder excludes its contents. */
function dockerignore(text: string): (file: string) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const negate = l.startsWith('!');
      const p = path.posix.normalize(l.replace(/^!/, '').replace(/^\/+/, '')).replace(/\/+$/, '');
      const re = p
        .split('/')
        .map((seg) => (seg === '**' ? '(?:.*)' : seg.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')))
        .join('/')
        .replace(/\(\?:\.\*\)\//g, '(?:.*/)?');
      return { negate, re: new RegExp(`^${re}(?:/.*)?$`) };
    });
  return (file) => {
    let ignored = false;
    for (const r of rules) if (r.re.test(file)) ignored = !r.negate;
    return ignored;
  };
}

interface Stage {
  name: string;
  fsRoot: string;
  workdir: string;
  env: Record<string, string>;
  user?: string;
  cmd?: string[];
  healthcheck?: string[];
  exposed: string[];
}

describe('the container image', () => {
  const dockerfile = parseDockerfile(fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8'));
  const ignored = dockerignore(fs.readFileSync(path.join(root, '.dockerignore'), 'utf8'));

  it('.dockerignore semantics as the engine applies them', () => {
    const m = dockerignore('**/node_modules\n.git\ndata\n*.tgz\n!keep.tgz');
    expect(['node_modules/x', 'plugins/sdk/node_modules/y', '.git/HEAD', 'data/pg', 'a.tgz'].map(m)).toEqual([true, true, true, true, true]);
    expect(['src/data/x.ts', 'keep.tgz', 'src/a.tgz', 'gitx'].map(m)).toEqual([false, false, false, false]);
  });

  it('is multi-stage, runs as a non-root user, installs production dependencies only and checks /readyz', () => {
    const froms = dockerfile.filter((i) => i.op === 'FROM');
    expect(froms.length).toBeGreaterThanOrEqual(2);
    const lastFrom = dockerfile.lastIndexOf(froms[froms.length - 1]);
    const runtime = dockerfile.slice(lastFrom);
    const user = runtime.filter((i) => i.op === 'USER').pop();
    expect(user?.args).toBeDefined();
    expect(['root', '0', '0:0']).not.toContain(user!.args);
    expect(runtime.some((i) => i.op === 'RUN' && /npm ci\b.*--omit=dev/.test(i.args))).toBe(true);
    expect(runtime.find((i) => i.op === 'HEALTHCHECK')?.args).toContain('/readyz');
    // The image's Node is one the project supports, the one the tests run on.
    const nodeVersion = pairs(dockerfile.find((i) => i.op === 'ARG' && i.args.startsWith('NODE_VERSION'))!.args)[0][1]!;
    const engines = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    expect(semver.satisfies(nodeVersion, engines)).toBe(true);
    expect(semver.major(nodeVersion)).toBe(semver.major(process.version));
  });

  it('compose.yaml runs the image on PostgreSQL', () => {
    const compose = YAML.parse(fs.readFileSync(path.join(root, 'compose.yaml'), 'utf8')) as { services: Record<string, { image?: string; build?: unknown; environment?: Record<string, string>; depends_on?: unknown }> };
    const db = Object.values(compose.services).find((s) => /^postgres:/.test(s.image ?? ''));
    const host = Object.values(compose.services).find((s) => s.build !== undefined);
    expect(db).toBeDefined();
    expect(host?.environment?.DATABASE_URL).toMatch(/^postgres:\/\//);
    expect(host?.depends_on).toBeDefined();
  });

  it('builds in a clean folder with its own steps, and the runtime stage serves and passes its health check', async () => {
    // Two installed node_modules trees are written and deleted: on a memory-backed folder when the system
    // has one (Linux's shared-memory tmpfs), that takes seconds instead of most of a minute on a busy disk.
    // Never inside the project: Node would resolve missing packages from the project's own node_modules.
    const scratch = fs.existsSync('/dev/shm') && fs.statSync('/dev/shm').isDirectory() ? '/dev/shm' : os.tmpdir();
    const work = fs.mkdtempSync(path.join(scratch, 'openwop-image-'));
    const shims = path.join(work, 'shims');
    fs.mkdirSync(shims);
    // No user `node` exists on this machine: ownership changes are recorded, not applied.
    fs.writeFileSync(path.join(shims, 'chown'), `#!/bin/sh\necho "$@" >> "${path.join(work, 'chown.log')}"\n`, { mode: 0o755 });
    const context = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: root, encoding: 'utf8' })
      .split('\0')
      .filter((f) => f && fs.existsSync(path.join(root, f)) && !ignored(f));
    expect(context).toEqual(expect.arrayContaining(['package.json', 'package-lock.json', 'src/main.ts']));
    expect(context.some((f) => f.startsWith('test/') || f.includes('node_modules/'))).toBe(false);

    const stages: Stage[] = [];
    const globalArgs: Record<string, string> = {};
    const inStage = (s: Stage, p: string) => path.join(s.fsRoot, path.posix.resolve(s.workdir, p));
    const copyInto = (from: string, to: string) => {
      fs.mkdirSync(path.dirname(to), { recursive: true });
      fs.cpSync(from, to, { recursive: true, verbatimSymlinks: true });
    };
    // The build stage's full `npm ci` is a layer the engine's cache keeps while its inputs do not change:
    // when the stage's package.json, lock and plugin manifests are the checkout's, the checkout's own
    // install of that lock (node_modules, linked) stands for it, which spares writing a 600 MB tree. The
    // runtime stage's `npm ci --omit=dev` always runs: that tree is what the image ships, and a production
    // dependency missing from it must fail the start below.
    const same = (s: Stage, file: string) => fs.existsSync(inStage(s, file)) && fs.readFileSync(inStage(s, file)).equals(fs.readFileSync(path.join(root, file)));
    const cachedInstall = (s: Stage, command: string): boolean => {
      if (!/^npm ci\b/.test(command) || /--omit=dev|--production/.test(command)) return false;
      const manifests = context.filter((c) => c === 'package.json' || c === 'package-lock.json' || /^plugins\/[^/]+\/package\.json$/.test(c));
      if (!manifests.includes('package-lock.json') || !manifests.every((m) => same(s, m))) return false;
      fs.symlinkSync(path.join(root, 'node_modules'), inStage(s, 'node_modules'), 'dir');
      return true;
    };
    let db: Awaited<ReturnType<typeof createScratchDatabase>> | undefined;
    const started = Date.now();
    const timings: string[] = [];
    try {
      // Stages run concurrently, as BuildKit runs them: a stage waits only for the stages it copies from.
      const plans: Array<{ stage: Stage; steps: Instruction[] }> = [];
      for (const ins of dockerfile) {
        if (ins.op === 'ARG' && !plans.length) {
          for (const [k, v] of pairs(ins.args)) globalArgs[k] = v ?? '';
          continue;
        }
        if (ins.op === 'FROM') {
          const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(expand(ins.args, globalArgs))!;
          expect(m[1]).toMatch(/^node:\d+\.\d+\.\d+-/);
          const created: Stage = { name: m[2] ?? String(stages.length), fsRoot: path.join(work, `stage-${stages.length}`), workdir: '/', env: {}, exposed: [] };
          fs.mkdirSync(created.fsRoot);
          stages.push(created);
          plans.push({ stage: created, steps: [] });
          continue;
        }
        if (!plans.length) throw new Error(`Dockerfile line ${ins.line}: ${ins.op} before FROM`);
        plans[plans.length - 1].steps.push(ins);
      }
      const finished = new Map<string, Promise<void>>();
      const runStage = async (s: Stage, steps: Instruction[]) => {
        for (const ins of steps) {
          const vars = { ...globalArgs, ...s.env };
          switch (ins.op) {
            case 'ARG':
              for (const [k, v] of pairs(ins.args)) s.env[k] = v ?? globalArgs[k] ?? '';
              break;
            case 'WORKDIR':
              s.workdir = path.posix.resolve(s.workdir, expand(ins.args, vars));
              fs.mkdirSync(inStage(s, '.'), { recursive: true });
              break;
            case 'ENV':
              for (const [k, v] of pairs(ins.args)) s.env[k] = expand(v ?? '', vars);
              break;
            case 'COPY': {
              const { flags: f, rest } = flags(ins.args);
              const parts = rest.split(/\s+/).map((p) => expand(p, vars));
              const dest = parts.pop()!;
              const many = parts.length > 1 || dest.endsWith('/');
              for (const src of parts) {
                let from: string;
                if (f.from) {
                  const other = stages.find((x) => x.name === f.from);
                  if (!other || !finished.has(f.from)) throw new Error(`Dockerfile line ${ins.line}: no earlier stage "${f.from}"`);
                  await finished.get(f.from);
                  from = path.join(other.fsRoot, src);
                } else {
                  const rel = path.posix.normalize(src).replace(/\/+$/, '');
                  const files = context.filter((c) => c === rel || c.startsWith(`${rel}/`));
                  if (!files.length) throw new Error(`Dockerfile line ${ins.line}: "${src}" is not in the build context (missing, or excluded by .dockerignore)`);
                  from = path.join(work, 'context-view', String(ins.line), rel);
                  for (const c of files) copyInto(path.join(root, c), path.join(work, 'context-view', String(ins.line), c));
                }
                if (!fs.existsSync(from)) throw new Error(`Dockerfile line ${ins.line}: "${src}" does not exist in stage "${f.from}"`);
                const target = inStage(s, dest);
                const into = fs.statSync(from).isDirectory() ? target : many ? path.join(target, path.basename(src)) : target;
                copyInto(from, into);
              }
              break;
            }
            case 'RUN': {
              const { flags: f, rest } = flags(ins.args);
              if (f.mount) expect(f.mount).toMatch(/^type=cache,/); // a build cache: here the machine's npm cache
              // Emulation stays inside the stage folder: a step may not reach outside its WORKDIR by absolute path.
              expect(rest).not.toMatch(/(^|[\s=])\/[A-Za-z]/);
              const env: NodeJS.ProcessEnv = {
                PATH: `${shims}${path.delimiter}${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}`,
                HOME: process.env.HOME,
                npm_config_offline: 'true',
                npm_config_update_notifier: 'false',
                ...globalArgs,
                ...s.env,
              };
              const t0 = Date.now();
              if (cachedInstall(s, rest)) {
                timings.push(`line ${ins.line} layer cache`);
                break;
              }
              try {
                await run('sh', ['-c', rest], { cwd: inStage(s, '.'), env, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 });
              } catch (e) {
                const err = e as { stderr?: string; stdout?: string };
                throw new Error(`Dockerfile line ${ins.line}: RUN ${rest} failed:\n${(err.stderr || err.stdout || String(e)).slice(-3000)}`);
              }
              timings.push(`line ${ins.line} ${Math.round((Date.now() - t0) / 100) / 10} s`);
              break;
            }
            case 'USER':
              s.user = ins.args;
              break;
            case 'CMD':
              s.cmd = JSON.parse(ins.args) as string[];
              break;
            case 'HEALTHCHECK':
              s.healthcheck = JSON.parse(flags(ins.args).rest.replace(/^CMD\s+/, '')) as string[];
              break;
            case 'EXPOSE':
              s.exposed.push(...ins.args.split(/\s+/));
              break;
            case 'VOLUME':
            case 'LABEL':
              break;
            default:
              throw new Error(`Dockerfile line ${ins.line}: the emulation does not know ${ins.op}`);
          }
        }
      };
      for (const plan of plans) finished.set(plan.stage.name, runStage(plan.stage, plan.steps));
      await Promise.all(finished.values());
      const runtime = stages[stages.length - 1];
      const app = inStage(runtime, '.');
      expect(fs.existsSync(path.join(app, 'node_modules', '@nestjs', 'core'))).toBe(true);
      expect(fs.existsSync(path.join(app, 'node_modules', 'jest'))).toBe(false); // dev dependencies stay out
      expect(fs.existsSync(path.join(app, 'node_modules', '@nestjs', 'cli'))).toBe(false);
      expect(fs.existsSync(path.join(app, 'src'))).toBe(false); // the runtime holds the build, not the sources
      expect(fs.readFileSync(path.join(work, 'chown.log'), 'utf8')).toMatch(new RegExp(`^${runtime.user}:`, 'm'));
      const buildMs = Date.now() - started;

      // Start the runtime stage as the engine would (its ENV, WORKDIR and CMD), on the test database.
      db = await createScratchDatabase();
      const port = await new Promise<number>((r) => {
        const srv = net.createServer().listen(0, '127.0.0.1', () => {
          const p = (srv.address() as net.AddressInfo).port;
          srv.close(() => r(p));
        });
      });
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH,
        ...runtime.env,
        HOST: '127.0.0.1', // the image binds 0.0.0.0; tests stay on loopback
        PORT: String(port),
        DATABASE_URL: db.url,
        OPENWOP_CREDENTIAL_KEYS: `k1:${randomBytes(32).toString('base64')}`,
        OPENWOP_BOOTSTRAP_KEY: 'false',
        OPENWOP_SCHEDULER_ENABLED: 'false',
      };
      expect(runtime.cmd![0]).toBe('node');
      const child = spawn(process.execPath, runtime.cmd!.slice(1), { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout!.on('data', (d) => (out += String(d)));
      child.stderr!.on('data', (d) => (out += String(d)));
      try {
        const health = async () => {
          try {
            await run(process.execPath, runtime.healthcheck!.slice(1), { cwd: app, env, timeout: 10_000 });
            return true;
          } catch {
            return false;
          }
        };
        // Before the host listens, the health check fails: it is not a check that always passes.
        const deadline = Date.now() + 120_000;
        while (!out.includes('openwop host listening') && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
        if (!out.includes('openwop host listening')) throw new Error(`the image's CMD did not serve:\n${out.slice(-3000)}`);
        expect(runtime.healthcheck![0]).toBe('node');
        expect(await health()).toBe(true);
        // The operator console was built in the build stage and is served from the runtime stage.
        expect(fs.existsSync(path.join(app, 'console', 'src'))).toBe(false);
        const page = await fetch(`http://127.0.0.1:${port}/console/`);
        expect(page.status).toBe(200);
        expect(await page.text()).toMatch(/<script[^>]+src="\/console\/assets\//);
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
        expect(await health()).toBe(false);
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      timings.push(`build ${Math.round(buildMs / 1000)} s`, `serve and health checks ${Math.round((Date.now() - started - buildMs) / 1000)} s`);
    } finally {
      await db?.drop();
      const t0 = Date.now();
      fs.rmSync(work, { recursive: true, force: true });
      process.stdout.write(`image emulation: ${timings.join(', ')}, clean-up ${Math.round((Date.now() - t0) / 1000)} s\n`);
    }
  }, 600_000);
});
