import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '../../..');

/** A plugins folder with one plugin that brought its own (stand-in) copy of rxjs and a dependency of its own. */
function pluginsFolder(): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'owh-peers-')));
  const pkg = (rel: string, manifest: object, main: string) => {
    fs.mkdirSync(path.join(dir, rel), { recursive: true });
    fs.writeFileSync(path.join(dir, rel, 'package.json'), JSON.stringify(manifest));
    fs.writeFileSync(path.join(dir, rel, 'index.js'), main);
  };
  pkg('node_modules/rxjs', { name: 'rxjs', version: '0.0.0-stand-in', main: 'index.js' }, 'module.exports = { standIn: true };');
  pkg('node_modules/helper', { name: 'helper', version: '1.0.0', main: 'index.js' }, 'module.exports = "own helper";');
  pkg(
    'node_modules/acme-plugin',
    { name: 'acme-plugin', version: '1.0.0', main: 'index.js' },
    `module.exports = {
      rxjs: require.resolve('rxjs'),
      operators: require.resolve('rxjs/operators'),
      nest: require.resolve('@nestjs/common'),
      sdk: require('@openwop-host/plugin-sdk/package.json').name,
      helper: require('helper'),
    };`,
  );
  return dir;
}

/** Runs in a Node process of its own: Jest's module registry does not go through Node's resolution. */
function loadFrom(dir: string, share: boolean): Record<string, unknown> {
  const script = `
    const peers = require(${JSON.stringify(path.join(__dirname, 'plugin-peers.ts'))});
    if (${share}) peers.shareHostPackagesWith(${JSON.stringify(dir)});
    let out;
    try { out = require(${JSON.stringify(path.join(dir, 'node_modules/acme-plugin'))}); } catch (e) { out = { error: e.code }; }
    process.stdout.write(JSON.stringify(out));`;
  const env = { ...process.env, SWC_NODE_PROJECT: path.join(ROOT, 'tsconfig.json') };
  return JSON.parse(execFileSync(process.execPath, ['-r', '@swc-node/register', '-e', script], { cwd: ROOT, env, encoding: 'utf8' })) as Record<string, unknown>;
}

describe('plugins outside the host folder share its packages', () => {
  const dir = pluginsFolder();
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('resolve the SDK and its peers (and their files) to the host’s copies, everything else from their own folder', () => {
    const hostFile = (m: string) => fs.realpathSync(require.resolve(m, { paths: [ROOT] }));
    const out = loadFrom(dir, true);
    expect(out).toEqual({ rxjs: hostFile('rxjs'), operators: hostFile('rxjs/operators'), nest: hostFile('@nestjs/common'), sdk: '@openwop-host/plugin-sdk', helper: 'own helper' });
  }, 60_000);

  it('without it, find their own copy or nothing', () => {
    expect(loadFrom(dir, false)).toEqual({ error: 'MODULE_NOT_FOUND' });
  }, 60_000);
});
