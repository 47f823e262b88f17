import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';

const ROOT = path.join(__dirname, '../..');
const PETSTORE = path.join(ROOT, 'plugins/openapi-tools/test/fixtures/petstore.json');

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
    const npm = (args: string[], cwd: string) => execFileSync('npm', args, { cwd, stdio: 'pipe', encoding: 'utf8', timeout: 120_000 });
    const packed = JSON.parse(npm(['pack', path.join(ROOT, 'plugins/openapi-tools'), '--pack-destination', work, '--json'], work)) as Array<{ filename: string; files: Array<{ path: string }> }>;
    const tarball = path.join(work, packed[0].filename);
    expect(packed[0].files.map((f) => f.path)).toEqual(expect.arrayContaining(['dist/index.js', 'package.json']));
    expect(packed[0].files.some((f) => f.path.startsWith('src/') || f.path.startsWith('test/'))).toBe(false);
    fs.writeFileSync(path.join(work, 'package.json'), JSON.stringify({ name: 'plugin-install-probe', private: true }));
    // Peer dependencies (Nest, the SDK) are the host's: install nothing but the plugin itself.
    npm(['install', '--no-save', '--legacy-peer-deps', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', tarball], work);
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
  it('packs compiled JavaScript and type declarations only', () => {
    const work = path.join(ROOT, 'test/.tmp', `sdk-${process.pid}`);
    fs.mkdirSync(work, { recursive: true });
    try {
      const packed = JSON.parse(
        execFileSync('npm', ['pack', path.join(ROOT, 'plugins/sdk'), '--pack-destination', work, '--json'], { cwd: work, encoding: 'utf8', stdio: 'pipe', timeout: 120_000 }),
      ) as Array<{ filename: string; files: Array<{ path: string }> }>;
      const files = packed[0].files.map((f) => f.path);
      expect(files).toEqual(expect.arrayContaining(['index.js', 'dist/index.js', 'dist/index.d.ts', 'dist/plugin.js', 'dist/tool-source.d.ts']));
      expect(files.some((f) => f.startsWith('src/') || f.endsWith('.spec.js'))).toBe(false);
      execFileSync('tar', ['-xzf', path.join(work, packed[0].filename), '-C', work]);
      // Published, the entry point falls back to the compiled build.
      const sdk = require(path.join(work, 'package/index.js')) as { definePlugin: unknown; PLUGIN_API_VERSION: string };
      expect(typeof sdk.definePlugin).toBe('function');
      expect(sdk.PLUGIN_API_VERSION).toBe(JSON.parse(fs.readFileSync(path.join(ROOT, 'plugins/sdk/package.json'), 'utf8')).version);
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  }, 120_000);
});
