import * as fs from 'node:fs';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { exportCommand, importCommand } from '../../src/capabilities/portability/portability.cli';
import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';
import { createTestApp, TestApp } from '../support/test-app';
import { tempDirs } from '../support/temp-dirs';

const temp = tempDirs();

const PLUGIN = path.join(__dirname, 'fixtures', 'roster-plugin.ts');

function capture() {
  const chunks: string[] = [];
  const stream = new Writable({
    write(c, _e, cb) {
      chunks.push(String(c));
      cb();
    },
  });
  return { stream, text: () => chunks.join('') };
}

describe('portability CLI: export / import', () => {
  let t: TestApp;
  let registry: ArtifactRegistryService;
  const dir = temp.make('openwop-port-cli-');

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_PLUGINS: PLUGIN, OPENWOP_PLUGINS_STRICT: 'true' } });
    registry = t.moduleRef.get(ArtifactRegistryService);
    for (let i = 0; i < 250; i++) await registry.install('test-roster', { id: `team-${i}`, members: [`m${i}`] }, { tenant: 'cli-a', principal: 'alice' }, 'api');
  });
  afterAll(async () => t?.close());

  it('exports a tenant to a file, plans and applies it into another tenant with a progress bar, idempotently', async () => {
    const file = path.join(dir, 'bundle.json');
    const exp = { out: capture(), err: capture() };
    expect(await exportCommand(t.app, { tenant: 'cli-a', kinds: 'roster', out: file }, { out: exp.out.stream, err: exp.err.stream })).toBe(0);
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).items).toHaveLength(250);
    expect(exp.err.text()).toContain('exported 250 item(s)');

    const dry = { out: capture(), err: capture() };
    expect(await importCommand(t.app, file, { tenant: 'cli-b', dryRun: true }, { out: dry.out.stream, err: dry.err.stream, progress: true })).toBe(0);
    expect(dry.out.text()).toContain('dry run (nothing written): 250 to create');
    expect(await registry.list({ tenant: 'cli-b' })).toEqual([]);

    const run = { out: capture(), err: capture() };
    expect(await importCommand(t.app, file, { tenant: 'cli-b', principal: 'ops' }, { out: run.out.stream, err: run.err.stream, progress: true })).toBe(0);
    expect(run.out.text()).toContain('imported: 250 created, 0 updated, 0 skipped');
    expect(run.err.text()).toContain('applying');
    const imported = await registry.list({ tenant: 'cli-b' });
    expect(imported).toHaveLength(250);
    expect(imported.every((a) => a.installedBy === 'ops')).toBe(true);

    const again = { out: capture(), err: capture() };
    expect(await importCommand(t.app, file, { tenant: 'cli-b', json: true }, { out: again.out.stream, err: again.err.stream })).toBe(0);
    expect(JSON.parse(again.out.text()).counts).toEqual({ created: 0, updated: 0, skipped: 250, failed: 0 });
  });

  it('exit 2 for a dry run with conflicts, 1 for a refused or unreadable bundle, never echoing a secret', async () => {
    const conflicted = path.join(dir, 'conflict.json');
    fs.writeFileSync(conflicted, JSON.stringify({ bundleVersion: '1', source: { origin: 'x' }, items: [{ kind: 'org-chart', ref: 'o', payload: {} }] }));
    const c = { out: capture(), err: capture() };
    expect(await importCommand(t.app, conflicted, { tenant: 'cli-c', dryRun: true }, { out: c.out.stream, err: c.err.stream })).toBe(2);
    expect(c.out.text()).toContain('conflict org-chart o');

    const leaky = path.join(dir, 'leaky.json');
    fs.writeFileSync(leaky, JSON.stringify({ bundle: { bundleVersion: '1', source: { origin: 'x' }, items: [{ kind: 'roster', ref: 'r', payload: { id: 'r', members: [], apiKey: 'sk-cli-canary-0123456789' } }] } }));
    const l = { out: capture(), err: capture() };
    expect(await importCommand(t.app, leaky, { tenant: 'cli-c' }, { out: l.out.stream, err: l.err.stream })).toBe(1);
    expect(l.err.text()).toContain('bundle_credential_material');
    expect(l.err.text() + l.out.text()).not.toContain('sk-cli-canary');

    const broken = path.join(dir, 'broken.json');
    fs.writeFileSync(broken, '{"bundleVersion":');
    const b = { out: capture(), err: capture() };
    expect(await importCommand(t.app, broken, { tenant: 'cli-c' }, { out: b.out.stream, err: b.err.stream })).toBe(1);
    expect(b.err.text()).toContain('cannot read a JSON bundle');
    expect(await registry.list({ tenant: 'cli-c' })).toEqual([]);
  });
});
