import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';

describe('packs loaded from tools.packDirectory at start (e2e)', () => {
  let t: TestApp;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-packs-'));

  beforeAll(async () => {
    fs.writeFileSync(
      path.join(dir, 'text.json'),
      JSON.stringify({
        name: 'vendor.folder.text',
        version: '1.0.0',
        engines: { openwop: '>=1.0.0' },
        runtime: { language: 'javascript', entry: 'index.js' },
        nodes: [{ typeId: 'vendor.folder.text.trim', version: '1.0.0', category: 'data', role: 'pure' }],
      }),
    );
    fs.mkdirSync(path.join(dir, 'chains'));
    fs.writeFileSync(
      path.join(dir, 'chains', 'pack.json'),
      JSON.stringify({
        name: 'vendor.folder.chains',
        version: '1.0.0',
        kind: 'workflow-chain',
        engines: { openwop: '>=1.0.0' },
        chains: [{ chainId: 'vendor.folder.digest', version: '1.0.0', label: 'Digest', description: 'd', parameters: { type: 'object' }, dag: { nodes: [{ id: 'a', typeId: 'core.noop' }] } }],
      }),
    );
    fs.writeFileSync(path.join(dir, 'broken.json'), '{"name": "not.a.valid.pack"');
    fs.writeFileSync(path.join(dir, 'invalid.json'), JSON.stringify({ name: 'vendor.folder.bad', version: 'x' }));
    t = await createTestApp({ configFile: { tools: { packDirectory: dir } } });
  });

  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('projects the valid packs for every tenant and reports the skipped files', async () => {
    for (const tenant of ['default', 'another']) {
      const token = await t.key({ tenant, scopes: ['tools:read'] });
      const ids = (await t.http('GET', '/v1/tools', { token })).body.map((d: { toolId: string }) => d.toolId);
      expect(ids).toEqual(expect.arrayContaining(['openwop:vendor.folder.text.trim', 'workflow:vendor.folder.digest']));
    }
    const ready = await t.http('GET', '/readyz');
    expect(ready.body.components['tool-catalog:pack-directory']).toMatchObject({ ok: false, data: { loaded: 2, skipped: 2 } });
  });
});
