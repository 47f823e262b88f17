/**
 * The built-in kinds end to end on the full host: tenant A's packs, prompt templates and
 * automations (plus a connection reference) are exported, imported into tenant B through the same
 * artifact installers proposals use, and show up there (tools in B's catalog, schedules disabled).
 */
import { ToolCatalogService } from '../../src/capabilities/tool-catalog';
import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { createTestApp, TestApp } from '../support/test-app';

const NODE_PACK = {
  name: 'vendor.acme.text-tools',
  version: '1.0.0',
  engines: { openwop: '>=1.0.0 <2.0.0' },
  runtime: { language: 'javascript', entry: 'dist/index.js' },
  nodes: [{ typeId: 'vendor.acme.text.upper', version: '1.0.0', category: 'data', role: 'pure', label: 'Upper-case' }],
};
const CHAIN_PACK = {
  name: 'vendor.acme.presets',
  version: '1.0.0',
  kind: 'workflow-chain',
  engines: { openwop: '>=1.0.0' },
  chains: [
    {
      chainId: 'vendor.acme.summarize',
      version: '1.0.0',
      label: 'Summarize',
      description: 'Summarizes a document',
      parameters: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] },
      dag: { nodes: [{ id: 'n1', typeId: 'core.noop' }] },
    },
  ],
};
const TEMPLATE = { templateId: 'vendor.acme.writer', version: '1.2.0', kind: 'system', text: 'You write {{tone}} prose.', variables: [] };
const AUTOMATION = { name: 'nightly-digest', enabled: true, schedule: { cron: '0 3 * * *' }, action: { type: 'start-run', workflowId: 'digest' } };

/** An importer holds what installing each item directly needs: packs, schedules (which start runs), connections. */
const IMPORTER = ['portability:export', 'portability:import', 'packs:publish', 'runs:create', 'connections:manage'];

describe('portability: estate round trip (built-in kinds)', () => {
  let t: TestApp;
  let registry: ArtifactRegistryService;
  let keyA: string;
  let keyB: string;
  let toolsB: string;
  const A = { tenant: 'estate-a', principal: 'alice' };

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    registry = t.moduleRef.get(ArtifactRegistryService);
    keyA = await t.key({ tenant: 'estate-a', principal: 'alice', scopes: IMPORTER });
    keyB = await t.key({ tenant: 'estate-b', principal: 'bob', scopes: IMPORTER });
    toolsB = await t.key({ tenant: 'estate-b', principal: 'bob', scopes: ['tools:read'] });
    await registry.install('node-pack', NODE_PACK, A, 'api');
    await registry.install('workflow-chain-pack', CHAIN_PACK, A, 'api');
    await registry.install('prompt-template', TEMPLATE, A, 'api');
    await registry.install('automation', AUTOMATION, A, 'api');
  });
  afterAll(async () => t?.close());

  it('advertises exactly the kinds whose providers and installers are mounted', async () => {
    const res = await t.http('GET', '/.well-known/openwop');
    expect(res.body.portability).toEqual({ export: true, import: true, dryRun: true, kinds: expect.arrayContaining(['pack', 'prompt-template', 'schedule']) });
    expect(res.body.portability.kinds).not.toContain('agent');
  });

  it('exports every kind as one schema-valid bundle', async () => {
    const res = await t.http('GET', '/v1/export', { token: keyA });
    expect(res.status).toBe(200);
    expect(SchemaRegistry.shared().validate('export-bundle', res.body)).toEqual([]);
    const refs = res.body.items.map((i: { kind: string; ref: string }) => `${i.kind} ${i.ref}`).sort();
    expect(refs).toEqual(
      ['pack node-pack:vendor.acme.text-tools', 'pack workflow-chain-pack:vendor.acme.presets', 'prompt-template prompt-template:vendor.acme.writer', 'schedule automation:nightly-digest'].sort(),
    );
    const filtered = await t.http('GET', '/v1/export?kinds=prompt-template', { token: keyA });
    expect(filtered.body.items.map((i: { kind: string }) => i.kind)).toEqual(['prompt-template']);
  });

  it('imports into tenant B: tools in its catalog, template installed, schedule disabled; re-import is a no-op', async () => {
    const bundle = (await t.http('GET', '/v1/export', { token: keyA })).body;
    const before = await t.http('GET', '/v1/tools', { token: toolsB });
    expect(before.body.map((x: { toolId: string }) => x.toolId)).not.toContain('openwop:vendor.acme.text.upper');

    const plan = await t.http('POST', '/v1/import?dryRun=true', { token: keyB, body: { bundle } });
    expect(plan.body.counts).toEqual({ create: 4, update: 0, skip: 0, conflict: 0 });

    const res = await t.http('POST', '/v1/import', { token: keyB, body: { bundle } });
    expect(res.status).toBe(200);
    expect(res.body.counts).toEqual({ created: 4, updated: 0, skipped: 0, failed: 0 });

    const tools = await t.http('GET', '/v1/tools', { token: toolsB });
    expect(tools.body.map((x: { toolId: string }) => x.toolId)).toContain('openwop:vendor.acme.text.upper');

    const B = { tenant: 'estate-b' };
    expect((await registry.get(B, 'prompt-template', 'vendor.acme.writer'))?.content).toEqual(TEMPLATE);
    const automation = await registry.get(B, 'automation', 'nightly-digest');
    expect(automation?.content).toEqual({ ...AUTOMATION, enabled: false });
    expect(automation?.installedBy).toBe('bob');
    const [schedule] = await t.ds.query(`SELECT enabled, next_run_at FROM automation_schedule WHERE tenant = $1 AND name = $2`, ['estate-b', 'nightly-digest']);
    expect(schedule).toEqual({ enabled: false, next_run_at: null });
    // The source keeps its schedule running.
    expect((await registry.get(A, 'automation', 'nightly-digest'))?.content.enabled).toBe(true);

    const again = await t.http('POST', '/v1/import', { token: keyB, body: bundle });
    expect(again.body.counts).toEqual({ created: 0, updated: 0, skipped: 4, failed: 0 });
  });

  it('a schedule the destination enabled after the import stays enabled on re-import', async () => {
    const B = { tenant: 'estate-b', principal: 'bob' };
    await registry.install('automation', { ...AUTOMATION, enabled: true }, B, 'api');
    const bundle = (await t.http('GET', '/v1/export?kinds=schedule', { token: keyA })).body;
    const res = await t.http('POST', '/v1/import', { token: keyB, body: bundle });
    expect(res.body.counts).toMatchObject({ created: 0, skipped: 1 });
    expect((await registry.get(B, 'automation', 'nightly-digest'))?.content.enabled).toBe(true);
  });

  it('imports a chain calling a chain another pack provides, right after that pack was installed', async () => {
    const C = { tenant: 'estate-c', principal: 'carol' };
    const keyC = await t.key({ ...C, scopes: IMPORTER });
    const chainsOf = (name: string, dag: Record<string, unknown>) => ({ ...CHAIN_PACK, name, chains: [{ ...CHAIN_PACK.chains[0], chainId: `${name}.run`, parameters: { type: 'object' }, dag }] });
    // The install changes the tenant's tool catalog: the import's checks find it to be read afresh.
    await registry.install('workflow-chain-pack', chainsOf('vendor.acme.helper', { nodes: [{ id: 'h', typeId: 'core.noop' }] }), C, 'api');
    const caller = chainsOf('vendor.acme.caller', { nodes: [{ id: 'c', typeId: 'core.tool', config: { toolId: 'workflow:vendor.acme.helper.run' } }] });
    const res = await t.http('POST', '/v1/import', { token: keyC, body: { bundleVersion: '1', source: { origin: 'adapter:test' }, items: [{ kind: 'pack', ref: 'caller', payload: caller }] } });
    expect([res.status, res.body.counts]).toEqual([200, { created: 1, updated: 0, skipped: 0, failed: 0 }]);
    expect((await registry.get(C, 'workflow-chain-pack', 'vendor.acme.caller'))?.content).toEqual(caller);
    // Without the chain it calls, the same pack is refused (the check is real).
    const lone = chainsOf('vendor.acme.lone', { nodes: [{ id: 'c', typeId: 'core.tool', config: { toolId: 'workflow:vendor.acme.nobody.run' } }] });
    const refused = await t.http('POST', '/v1/import', { token: keyC, body: { bundleVersion: '1', source: { origin: 'adapter:test' }, items: [{ kind: 'pack', ref: 'lone', payload: lone }] } });
    expect([refused.status, refused.body.error, refused.body.details.problems]).toEqual([
      422,
      'bundle_item_invalid',
      [expect.objectContaining({ path: '/items/0/payload/chains/0/dag/nodes/0/config/toolId', code: 'unknown_tool' })],
    ]);
    expect(await registry.get(C, 'workflow-chain-pack', 'vendor.acme.lone')).toBeUndefined();
    // Another tenant's chain does not count: estate-a's summarize chain is in its catalog, not in estate-c's.
    expect(await t.moduleRef.get(ToolCatalogService).descriptorOf({ tenant: 'estate-a' }, 'workflow:vendor.acme.summarize')).toBeDefined();
    const borrowed = chainsOf('vendor.acme.borrower', { nodes: [{ id: 'c', typeId: 'core.tool', config: { toolId: 'workflow:vendor.acme.summarize' } }] });
    const other = await t.http('POST', '/v1/import', { token: keyC, body: { bundleVersion: '1', source: { origin: 'adapter:test' }, items: [{ kind: 'pack', ref: 'borrower', payload: borrowed }] } });
    expect([other.status, other.body.details?.problems?.map((p: { code: string }) => p.code)]).toEqual([422, ['unknown_tool']]);
    expect(await registry.get(C, 'workflow-chain-pack', 'vendor.acme.borrower')).toBeUndefined();
  });

  it('a malformed pack refuses the whole bundle before anything is written', async () => {
    const bundle = {
      bundleVersion: '1',
      source: { origin: 'adapter:test' },
      items: [
        { kind: 'prompt-template', ref: 't', payload: { ...TEMPLATE, templateId: 'vendor.acme.other' } },
        { kind: 'pack', ref: 'p', payload: { name: 'vendor.acme.broken' } },
      ],
    };
    const res = await t.http('POST', '/v1/import', { token: keyB, body: bundle });
    expect(res.status).toBe(422);
    expect(res.body.details.items[0]).toMatchObject({ ref: 'p', kind: 'pack' });
    expect(await registry.get({ tenant: 'estate-b' }, 'prompt-template', 'vendor.acme.other')).toBeUndefined();
  });

  it('imports a connection reference without its credential and lists it to re-bind', async () => {
    const bundle = {
      bundleVersion: '1',
      source: { origin: 'adapter:conformance' },
      items: [
        { kind: 'prompt-template', ref: 'tpl-1', payload: { templateId: 'conformance-tpl', version: '1.0.0', kind: 'system', text: 'Hello.' } },
        { kind: 'connection-ref', ref: 'conn-1', dependsOn: ['tpl-1'], payload: { provider: 'slack', credentialRef: 'cred:abc' } },
      ],
    };
    const plan = await t.http('POST', '/v1/host/sample/import?dryRun=true', { token: keyB, body: { bundle } });
    expect(plan.body.secretsToRebind).toEqual(['slack']);
    const res = await t.http('POST', '/v1/host/sample/import', { token: keyB, body: { bundle } });
    expect(res.status).toBe(200);
    expect(res.body.items.map((i: { ref: string; result: string }) => [i.ref, i.result])).toEqual([
      ['tpl-1', 'created'],
      ['conn-1', 'created'],
    ]);
    expect(res.body.secretsToRebind).toEqual(['slack']);
    expect(res.text).not.toContain('cred:abc');
  });

  it('drives export and import through the generated OpenAPI client', async () => {
    const exported = await t.api(keyA).GET('/v1/export', { params: { query: { kinds: 'prompt-template' } } });
    expect(exported.response.status).toBe(200);
    const bundle = exported.data!;
    expect(bundle.items.map((i) => i.kind)).toEqual(['prompt-template']);
    const planned = await t.api(keyB).POST('/v1/import', { params: { query: { dryRun: 'true' } }, body: { bundle } });
    expect(planned.response.status).toBe(200);
    expect(planned.data).toMatchObject({ dryRun: true, itemCount: 1 });
    const refused = await t.api(keyB).POST('/v1/import', { body: { ...bundle, bundleVersion: '2' } as unknown as typeof bundle });
    expect(refused.response.status).toBe(422);
    expect(refused.error).toMatchObject({ error: 'bundle_version_unsupported' });
  });
});
