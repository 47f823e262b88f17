/**
 * The plugin author's journey of docs/plugins.md ("Writing a plugin, step by step"), as a third party
 * lives it, outside the host's checkout and offline (npm installs from tarballs and from its cache, which
 * the host's own `npm ci` filled):
 *
 *   1. `npm run sdk:pack` in the host checkout writes dist/openwop-host-plugin-sdk-<version>.tgz;
 *   2. the template (plugins/template) is copied to a folder of the author's and renamed;
 *   3. `npm install --save-dev <SDK tarball>` there installs the SDK and the template's toolchain (its lock);
 *   4. `npm pack` builds the plugin with the template's own tsconfig and packs it;
 *   5. `npm install --prefix <plugins folder> <plugin tarball>` installs it outside the host's checkout;
 *   6. a host started with OPENWOP_PLUGINS_DIR and OPENWOP_PLUGINS loads it: its tool is in the catalog and
 *      a run calls the tool and the node type.
 *
 * Nothing of it writes the host's package.json or lock file.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HostProcess, startHostProcess } from '../support/host-process';
import { createScratchDatabase } from '../support/scratch-db';

const ROOT = path.join(__dirname, '../..');
const MANIFESTS = ['package.json', 'package-lock.json'].map((f) => path.join(ROOT, f));
const OFFLINE = ['--offline', '--no-audit', '--no-fund'];

const hash = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');
const npm = (args: string[], cwd: string) => execFileSync('npm', args, { cwd, stdio: 'pipe', encoding: 'utf8', timeout: 120_000 });
const nodeResolve = (request: string, cwd: string) =>
  execFileSync(process.execPath, ['-p', `require('node:fs').realpathSync(require.resolve(${JSON.stringify(request)}))`], { cwd, encoding: 'utf8' }).trim();

describe('the plugin author journey: SDK tarball, template, plugins folder, host', () => {
  const before = MANIFESTS.map(hash);
  const work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-author-')));
  const project = path.join(work, 'acme-greetings');
  const pluginsDir = path.join(work, 'openwop-plugins');
  let sdkTarball: string;
  let packedFiles: string[];
  let db: { url: string; drop(): Promise<void> } | undefined;
  let host: HostProcess | undefined;

  beforeAll(async () => {
    // 0. The template's lock is the host lock's subset (what makes step 3 work offline).
    execFileSync(process.execPath, [path.join(ROOT, 'bin/plugin-template-lock.js'), '--check'], { cwd: ROOT, stdio: 'pipe' });

    // 1. The SDK, packed by the one documented command.
    const version = (JSON.parse(fs.readFileSync(path.join(ROOT, 'plugins/sdk/package.json'), 'utf8')) as { version: string }).version;
    npm(['run', 'sdk:pack'], ROOT);
    sdkTarball = path.join(ROOT, 'dist', `openwop-host-plugin-sdk-${version}.tgz`);
    expect(fs.existsSync(sdkTarball)).toBe(true);

    // 2. The template, copied out of the checkout (without what a build or install left in it) and renamed.
    const template = path.join(ROOT, 'plugins/template');
    fs.cpSync(template, project, { recursive: true, filter: (src) => !/^(node_modules|dist|build)([\\/]|$)|\.tgz$/.test(path.relative(template, src)) });
    npm(['pkg', 'set', 'name=acme-greetings', 'version=1.0.0'], project);

    // 3. The SDK from its tarball; the toolchain from the template's lock.
    npm(['install', ...OFFLINE, '--legacy-peer-deps', '--save-dev', sdkTarball], project);

    // 4. Built with the template's own tsconfig (`prepack`) and packed.
    const packed = JSON.parse(npm(['pack', '--json'], project)) as Array<{ filename: string; files: Array<{ path: string }> }>;
    packedFiles = packed[0].files.map((f) => f.path);

    // 5. Installed into a plugins folder of its own, its peers (Nest, the SDK) left to the host.
    fs.mkdirSync(pluginsDir);
    npm(['install', '--prefix', pluginsDir, ...OFFLINE, '--legacy-peer-deps', path.join(project, packed[0].filename)], work);

    // 6. A host with that folder.
    db = await createScratchDatabase();
    const config = path.join(work, 'openwop.json');
    fs.writeFileSync(config, JSON.stringify({ plugins: { 'example.greetings': { greeting: 'Howdy', scopes: ['tools:greet'] } } }));
    host = await startHostProcess({
      env: { DATABASE_URL: db.url, OPENWOP_PLUGINS_DIR: pluginsDir, OPENWOP_PLUGINS: 'acme-greetings', OPENWOP_PLUGINS_STRICT: 'true', OPENWOP_CONFIG: config },
      chains: {
        tenant: 'default',
        name: 'vendor.acme.greetings',
        chains: {
          'vendor.acme.greetings.greet': {
            nodes: [
              { id: 'tool', typeId: 'core.tool', config: { toolId: 'x-host-example-greetings.greet', arguments: { name: '{{inputs.name}}' } } },
              { id: 'node', typeId: 'vendor.example.greet', config: { name: '{{inputs.name}}' } },
            ],
            edges: [],
          },
        },
      },
      scopes: ['runs:create', 'runs:read', 'tools:read', 'tools:greet'],
    });
  }, 180_000);

  afterAll(async () => {
    await host?.close();
    await db?.drop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('builds against the SDK and the toolchain installed in the author’s project, not the checkout’s', () => {
    const own = path.join(project, 'node_modules') + path.sep;
    for (const m of ['@openwop-host/plugin-sdk', '@nestjs/common', 'typescript']) expect(nodeResolve(m, project).startsWith(own)).toBe(true);
    const manifest = JSON.parse(fs.readFileSync(path.join(project, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    expect(path.resolve(project, manifest.devDependencies['@openwop-host/plugin-sdk'].replace(/^file:/, ''))).toBe(sdkTarball);
    expect(packedFiles).toEqual(expect.arrayContaining(['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/greet.node-executor.js']));
    expect(packedFiles.some((f) => /^(src|test|build)\//.test(f))).toBe(false);
  });

  it('installs the plugin into the plugins folder without a copy of Nest or of the SDK', () => {
    expect(fs.existsSync(path.join(pluginsDir, 'node_modules/acme-greetings/dist/index.js'))).toBe(true);
    for (const peer of ['@nestjs', '@openwop-host', 'rxjs']) expect(fs.existsSync(path.join(pluginsDir, 'node_modules', peer))).toBe(false);
  });

  it('the host loads it from OPENWOP_PLUGINS_DIR: its tool is in the catalog and a run calls the tool and the node type', async () => {
    expect(host!.logs.some((l) => l.includes('plugin loaded') && l.includes('example.greetings'))).toBe(true);
    const tools = await host!.http('GET', '/v1/tools?source=host-extension');
    expect(tools.status).toBe(200);
    expect((tools.body as Array<{ toolId: string }>).map((d) => d.toolId)).toContain('x-host-example-greetings.greet');
    const r = await host!.http('POST', '/v1/runs', { body: { workflowId: 'vendor.acme.greetings.greet', inputs: { name: 'Ada' } } });
    expect(r.status).toBe(201);
    let run: { status: string; outputs?: unknown } = { status: 'pending' };
    for (const until = Date.now() + 30_000; !['completed', 'failed'].includes(run.status) && Date.now() < until; ) {
      await new Promise((res) => setTimeout(res, 100));
      run = (await host!.http('GET', `/v1/runs/${r.body.runId}`)).body;
    }
    expect(run.status).toBe('completed');
    expect(run.outputs).toEqual({ tool: { greeting: 'Howdy, Ada!' }, node: { greeting: 'Howdy, Ada!' } });
  });

  it('left the host checkout’s package.json and package-lock.json as they were', () => {
    expect(MANIFESTS.map(hash)).toEqual(before);
  });
});
