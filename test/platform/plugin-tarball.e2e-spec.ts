import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { installChains, waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';

const ROOT = path.join(__dirname, '../..');
const PETSTORE = path.join(ROOT, 'plugins/openapi-tools/test/fixtures/petstore.json');

type Packed = Array<{ filename: string; files: Array<{ path: string }> }>;

/** npm as a third party runs it (offline: everything it needs is a tarball or the host's own copy). */
const npm = (args: string[], cwd: string) => execFileSync('npm', args, { cwd, stdio: 'pipe', encoding: 'utf8', timeout: 240_000 });
const packInto = (dir: string, dest: string) => JSON.parse(npm(['pack', dir, '--pack-destination', dest, '--json'], dest)) as Packed;
/** Installs one tarball into a project; its peer dependencies (Nest, the SDK) are the host's. */
const installTarball = (tarball: string, cwd: string) => npm(['install', '--no-save', '--legacy-peer-deps', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', tarball], cwd);

/** A copy of a package of this repository without what a build or an install left in it. */
function copyPackage(from: string, to: string): void {
  fs.cpSync(from, to, { recursive: true, filter: (src) => !/[\\/](node_modules|dist|build)([\\/]|$)|\.tgz$/.test(path.relative(from, src)) });
}

/**
 * The plugin loop as a third party lives it: the example tool-source plugin is packed with
 * `npm pack` (which builds it), installed from the tarball into a project beside the host, listed
 * in OPENWOP_PLUGINS, and its tools appear in the catalog. Nest must resolve to the host's single
 * copy: two copies would break dependency injection.
 */
describe('a plugin installed from its npm tarball', () => {
  const work = path.join(ROOT, 'test/.tmp', `tarball-${process.pid}`);
  let installed: string;
  let t: TestApp;

  beforeAll(async () => {
    fs.rmSync(work, { recursive: true, force: true });
    fs.mkdirSync(work, { recursive: true });
    const packed = packInto(path.join(ROOT, 'plugins/openapi-tools'), work);
    const tarball = path.join(work, packed[0].filename);
    expect(packed[0].files.map((f) => f.path)).toEqual(expect.arrayContaining(['dist/index.js', 'package.json']));
    expect(packed[0].files.some((f) => f.path.startsWith('src/') || f.path.startsWith('test/'))).toBe(false);
    fs.writeFileSync(path.join(work, 'package.json'), JSON.stringify({ name: 'plugin-install-probe', private: true }));
    // Peer dependencies (Nest, the SDK) are the host's: install nothing but the plugin itself.
    installTarball(tarball, work);
    installed = path.join(work, 'node_modules/@openwop-host/openapi-tools');
    t = await createTestApp({
      env: { OPENWOP_PLUGINS: installed, OPENWOP_PLUGINS_STRICT: 'true' },
      configFile: { plugins: { 'openwop.openapi-tools': { vendor: 'acme', documents: [{ id: 'petstore', path: PETSTORE }] } } },
    });
  }, 180_000);

  afterAll(async () => {
    await t?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('loads from the installed package and projects its tools into the catalog', async () => {
    expect(t.host.plugins.loaded.map((p) => p.id)).toEqual(['openwop.openapi-tools']);
    const key = await t.key({ scopes: ['tools:read'] });
    const res = await t.http('GET', '/v1/tools?source=host-extension', { token: key });
    expect(res.status).toBe(200);
    const ids = (res.body as Array<{ toolId: string }>).map((d) => d.toolId);
    expect(ids.some((id) => id.startsWith('x-host-acme-petstore.'))).toBe(true);
  });

  it('shares the host’s single copy of Nest and of the plugin SDK', () => {
    const fromPlugin = (m: string) => fs.realpathSync(require.resolve(m, { paths: [installed] }));
    expect(fromPlugin('@nestjs/common')).toBe(fs.realpathSync(require.resolve('@nestjs/common')));
    expect(fromPlugin('@nestjs/core')).toBe(fs.realpathSync(require.resolve('@nestjs/core')));
    expect(fs.existsSync(path.join(installed, 'node_modules'))).toBe(false);
  });
});

describe('the plugin SDK package', () => {
  it('packs what a third party installs or publishes: compiled JavaScript, type declarations, its README', () => {
    const work = path.join(ROOT, 'test/.tmp', `sdk-${process.pid}`);
    fs.rmSync(work, { recursive: true, force: true });
    fs.mkdirSync(work, { recursive: true });
    try {
      // Packed from a copy: `prepack` builds it, and the checkout is not written meanwhile.
      copyPackage(path.join(ROOT, 'plugins/sdk'), path.join(work, 'sdk'));
      const packed = packInto(path.join(work, 'sdk'), work);
      const files = packed[0].files.map((f) => f.path);
      expect(files).toEqual(expect.arrayContaining(['package.json', 'README.md', 'CHANGELOG.md', 'index.js', 'dist/index.js', 'dist/index.d.ts', 'dist/plugin.js', 'dist/tool-source.d.ts', 'dist/tool-source-contract.js']));
      expect(files.some((f) => f.startsWith('src/') || f.includes('.spec.') || f.startsWith('tsconfig'))).toBe(false);
      execFileSync('tar', ['-xzf', path.join(work, packed[0].filename), '-C', work]);
      const manifest = JSON.parse(fs.readFileSync(path.join(work, 'package/package.json'), 'utf8')) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      const own = JSON.parse(fs.readFileSync(path.join(ROOT, 'plugins/sdk/package.json'), 'utf8')) as { version: string };
      // Publishable: named, versioned, licensed, typed, with its entry points in the package and Nest as peers only.
      expect(manifest).toMatchObject({ name: '@openwop-host/plugin-sdk', version: own.version, license: 'Apache-2.0', engines: { node: expect.any(String) }, publishConfig: { access: 'public' } });
      expect(manifest.dependencies).toBeUndefined();
      expect(Object.keys(manifest.peerDependencies).sort()).toEqual(['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs']);
      expect(manifest.exports['.']).toEqual({ types: './dist/index.d.ts', default: './index.js' });
      for (const f of [manifest.main, manifest.types, manifest.exports['.'].types, manifest.exports['.'].default]) expect(fs.existsSync(path.join(work, 'package', f))).toBe(true);
      // Published, the entry point falls back to the compiled build.
      const sdk = require(path.join(work, 'package/index.js')) as { definePlugin: unknown; checkToolSourceContract: unknown; PLUGIN_API_VERSION: string };
      expect(typeof sdk.definePlugin).toBe('function');
      expect(typeof sdk.checkToolSourceContract).toBe('function');
      expect(sdk.PLUGIN_API_VERSION).toBe(own.version);
      // Its README documents every extension point the SDK declares, and the plugin context's fields.
      const readme = fs.readFileSync(path.join(work, 'package/README.md'), 'utf8');
      const dist = path.join(work, 'package/dist');
      const declarations = fs.readdirSync(dist).filter((f) => f.endsWith('.d.ts')).map((f) => fs.readFileSync(path.join(dist, f), 'utf8')).join('\n');
      const points = [...declarations.matchAll(/export declare const (\w+): import\("\.\/extension-point"\)\.ExtensionPoint</g)].map((m) => m[1]);
      expect(points.length).toBeGreaterThanOrEqual(9);
      for (const p of points) expect(readme).toContain(`@${p}(`);
      for (const field of ['config', 'logger', 'http', 'kv', 'id']) expect(readme).toMatch(new RegExp(`\`${field}\``));
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  }, 240_000);
});

/**
 * The plugin author's loop, as a third party lives it, with nothing of the host's checkout but two
 * tarballs: the SDK is packed, the template project (a copy of plugins/template) installs it from its
 * tarball, runs its own tests (the SDK's contract kits) and packs itself; the host installs the
 * template's tarball, loads it, lists its tool and runs a workflow that calls the tool and its node type.
 */
describe('the plugin template, built against the SDK tarball and loaded by a host', () => {
  const work = path.join(ROOT, 'test/.tmp', `template-${process.pid}`);
  const author = path.join(work, 'author');
  const template = path.join(author, 'template');
  let installed: string;
  let testOutput: string;
  let packedFiles: string[];
  let t: TestApp;

  beforeAll(async () => {
    fs.rmSync(work, { recursive: true, force: true });
    fs.mkdirSync(author, { recursive: true });
    copyPackage(path.join(ROOT, 'plugins/sdk'), path.join(work, 'sdk'));
    const sdk = packInto(path.join(work, 'sdk'), work);
    // The author's folder: the SDK installed from its tarball, the template project inside it.
    fs.writeFileSync(path.join(author, 'package.json'), JSON.stringify({ name: 'template-author', private: true }));
    installTarball(path.join(work, sdk[0].filename), author);
    copyPackage(path.join(ROOT, 'plugins/template'), template);
    testOutput = npm(['test'], template);
    const packed = packInto(template, work);
    packedFiles = packed[0].files.map((f) => f.path);
    const host = path.join(work, 'host');
    fs.mkdirSync(host);
    fs.writeFileSync(path.join(host, 'package.json'), JSON.stringify({ name: 'template-host', private: true }));
    installTarball(path.join(work, packed[0].filename), host);
    installed = path.join(host, 'node_modules/openwop-plugin-template');
    t = await createTestApp({
      env: { OPENWOP_PLUGINS: installed, OPENWOP_PLUGINS_STRICT: 'true' },
      configFile: { plugins: { 'example.greetings': { greeting: 'Howdy', scopes: ['tools:greet'] } } },
    });
  }, 600_000);

  afterAll(async () => {
    await t?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('builds and tests against the SDK from its tarball, not the checkout’s copy', () => {
    // Node's own resolution from the template project (Jest's resolver maps the SDK to its sources).
    const resolved = execFileSync(process.execPath, ['-p', "require('node:fs').realpathSync(require.resolve('@openwop-host/plugin-sdk'))"], { cwd: template, encoding: 'utf8' }).trim();
    expect(resolved.startsWith(fs.realpathSync(path.join(author, 'node_modules')))).toBe(true);
    expect(testOutput).toMatch(/^# pass [1-9]\d*$/m);
    expect(testOutput).toMatch(/^# fail 0$/m);
    expect(packedFiles).toEqual(expect.arrayContaining(['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/greeting.tool-source.js']));
    expect(packedFiles.some((f) => f.startsWith('src/') || f.startsWith('test/') || f.startsWith('build/'))).toBe(false);
  });

  it('loads the installed template: its tool is in the catalog, behind its scope', async () => {
    expect(t.host.plugins.loaded.map((p) => p.id)).toEqual(['example.greetings']);
    const ids = async (token: string) => ((await t.http('GET', '/v1/tools?source=host-extension', { token })).body as Array<{ toolId: string }>).map((d) => d.toolId);
    expect(await ids(await t.key({ scopes: ['tools:read'] }))).not.toContain('x-host-example-greetings.greet');
    expect(await ids(await t.key({ scopes: ['tools:read', 'tools:greet'] }))).toContain('x-host-example-greetings.greet');
  });

  it('a run calls the template’s tool and its node type, configured by the host', async () => {
    await installChains(t, 'default', 'private.example.greetings', {
      'private.example.greet': {
        nodes: [
          { id: 'tool', typeId: 'core.tool', config: { toolId: 'x-host-example-greetings.greet', arguments: { name: '{{inputs.name}}' } } },
          { id: 'node', typeId: 'vendor.example.greet', config: { name: '{{inputs.name}}' } },
        ],
        edges: [],
      },
    });
    const key = await t.key({ scopes: ['runs:create', 'runs:read', 'tools:read', 'tools:greet'] });
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'private.example.greet', inputs: { name: 'Ada' } } });
    expect(r.status).toBe(201);
    const done = await waitForStatus(t, key, r.body.runId, ['completed', 'failed'], 30_000);
    expect(done.status).toBe('completed');
    expect(done.outputs).toEqual({ tool: { greeting: 'Howdy, Ada!' }, node: { greeting: 'Howdy, Ada!' } });
  });

  it('shares the host’s single copy of Nest', () => {
    const fromPlugin = (m: string) => fs.realpathSync(require.resolve(m, { paths: [installed] }));
    expect(fromPlugin('@nestjs/common')).toBe(fs.realpathSync(require.resolve('@nestjs/common')));
    expect(fs.existsSync(path.join(installed, 'node_modules'))).toBe(false);
  });
});
