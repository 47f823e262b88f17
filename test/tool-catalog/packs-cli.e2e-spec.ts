/** `openwop-host packs install|list|uninstall` against a listening host, and `runs follow`. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { packFiles, packsInstall, packsList, packsUninstall } from '../../src/cli/packs.cli';
import { runsFollow } from '../../src/cli/runs.cli';
import { createTestApp, TestApp } from '../support/test-app';
import { chainPack } from '../runs/run-kit';
import { sink } from '../support/sink';


describe('packs CLI', () => {
  let t: TestApp;
  let url: string;
  let key: string;
  let dir: string;
  const io = (k = key) => ({ url, key: k, out: sink(), err: sink() });

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_CONSOLE: 'false' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.getHttpServer().address();
    url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    key = await t.key({ scopes: ['packs:publish', 'tools:read', 'runs:create', 'runs:read'] });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'packs-cli-'));
  });

  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('installs every *.json file of a directory, lists them, uninstalls one', async () => {
    const d = path.join(dir, 'good');
    fs.mkdirSync(d);
    fs.writeFileSync(path.join(d, 'a.json'), JSON.stringify(chainPack('vendor.cli.a', { 'vendor.cli.a': { nodes: [{ id: 'n', typeId: 'core.noop', config: { v: '{{inputs.v}}' } }] } })));
    fs.writeFileSync(path.join(d, 'b.json'), JSON.stringify(chainPack('vendor.cli.b', { 'vendor.cli.b': { nodes: [{ id: 'n', typeId: 'core.noop' }] } })));
    fs.writeFileSync(path.join(d, 'notes.txt'), 'not a pack');
    expect(packFiles(d).map((f) => path.basename(f))).toEqual(['a.json', 'b.json']);
    const o = io();
    expect(await packsInstall(o, d, {})).toBe(0);
    expect(o.out.text()).toMatch(/created\s+vendor\.cli\.a@1\.0\.0\s+chains: vendor\.cli\.a/);
    expect(o.out.text()).toMatch(/created\s+vendor\.cli\.b@1\.0\.0/);

    const l = io();
    expect(await packsList(l, { json: true })).toBe(0);
    const packs = JSON.parse(l.out.text()).packs as Array<{ id: string; name: string }>;
    expect(packs.map((p) => p.name)).toEqual(['vendor.cli.a', 'vendor.cli.b']);

    const u = io();
    expect(await packsUninstall(u, packs[1].id)).toBe(0);
    expect(u.out.text()).toContain('uninstalled vendor.cli.b@1.0.0');
    const after = io();
    await packsList(after, {});
    expect(after.out.text()).toContain('vendor.cli.a');
    expect(after.out.text()).not.toContain('vendor.cli.b');
    await expect(packsUninstall(io(), packs[1].id)).rejects.toThrow(/404 not_found/);
  });

  it('prints every problem of a refused pack and exits 1, installing nothing', async () => {
    const file = path.join(dir, 'broken.json');
    fs.writeFileSync(file, JSON.stringify(chainPack('vendor.cli.broken', {
      'vendor.cli.broken': {
        nodes: [{ id: 'a', typeId: 'vendor.x.y' }, { id: 'b', typeId: 'core.tool', config: { toolId: 'x-acme-search' } }],
        edges: [{ from: 'a', to: 'b' }, { from: 'b', to: 'a' }],
      },
    })));
    const o = io();
    expect(await packsInstall(o, file, {})).toBe(1);
    const err = o.err.text();
    expect(err).toContain('422 pack_invalid');
    expect(err).toMatch(/\/chains\/0\/dag\/nodes\/0\/typeId\s+unknown_node_type/);
    expect(err).toMatch(/\/chains\/0\/dag\/nodes\/1\/config\/toolId\s+unknown_tool/);
    expect(err).toMatch(/\/chains\/0\/dag\/edges\s+cycle/);
    const l = io();
    await packsList(l, {});
    expect(l.out.text()).not.toContain('vendor.cli.broken');
    // not JSON, and a missing file
    fs.writeFileSync(path.join(dir, 'bad.json'), '{"name":');
    const b = io();
    expect(await packsInstall(b, path.join(dir, 'bad.json'), {})).toBe(1);
    expect(b.err.text()).toContain('not JSON');
    await expect(packsInstall(io(), path.join(dir, 'missing.json'), {})).rejects.toThrow(/no such file/);
  });

  it('refuses without packs:publish (403) and prints the host error', async () => {
    const reader = await t.key({ scopes: ['tools:read'] });
    const file = path.join(dir, 'x.json');
    fs.writeFileSync(file, JSON.stringify(chainPack('vendor.cli.x', { 'vendor.cli.x': { nodes: [{ id: 'n', typeId: 'core.noop' }] } })));
    const o = io(reader);
    expect(await packsInstall(o, file, {})).toBe(1);
    expect(o.err.text()).toContain('403 forbidden');
  });

  it('runs follow prints a finished run whole, with its outputs', async () => {
    const started = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.cli.a', inputs: { v: 7 } } });
    expect(started.status).toBe(201);
    const o = io();
    expect(await runsFollow(o, started.body.runId, {})).toBe(0);
    expect(o.err.text()).toContain('1/1 nodes done  run.completed');
    expect(o.out.text()).toContain(`${started.body.runId}  completed`);
    expect(o.out.text()).toContain('"v": 7');
  });
});
