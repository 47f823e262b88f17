/** Direct pack installs (`/v1/installed-packs`) and the install checks on every install path: direct, proposal apply, bundle import. */
import { createTestApp, TestApp } from '../support/test-app';
import { chainPack } from '../runs/run-kit';

/** One pack with a problem of every class the install checks know, each in its own place. */
function brokenPack(name: string): Record<string, unknown> {
  return chainPack(name, {
    'vendor.broken.all': {
      nodes: [
        { id: 'a', typeId: 'vendor.nobody.serves', config: {} },
        { id: 'b', typeId: 'core.tool', config: { toolId: 'x-nobody-has-this-tool' } },
        { id: 'c', typeId: 'core.noop', config: { text: 'hello {{inputs.name' } },
        { id: 'd', typeId: 'core.noop', config: { v: '{{nodes.e.value}}' } },
        { id: 'e', typeId: 'core.noop', config: {} },
        { id: 'f', typeId: 'core.noop', config: {} },
      ],
      edges: [
        { from: 'a', to: 'ghost' },
        { from: 'e', to: 'f' },
        { from: 'f', to: 'e' },
      ],
    },
  });
}

const EVERY_CLASS = ['unknown_node_type', 'unknown_tool', 'bad_template', 'unknown_edge_endpoint', 'cycle'];

function expectEveryProblem(problems: Array<{ path: string; code: string; message: string }>, base: string): void {
  for (const p of problems) expect([typeof p.path, typeof p.code, typeof p.message]).toEqual(['string', 'string', 'string']);
  const byCode = (code: string) => problems.filter((p) => p.code === code).map((p) => p.path);
  expect(byCode('unknown_node_type')).toEqual([`${base}/chains/0/dag/nodes/0/typeId`]);
  expect(byCode('unknown_tool')).toEqual([`${base}/chains/0/dag/nodes/1/config/toolId`]);
  // an unclosed placeholder, and a read of a node that does not run before the reader
  expect(byCode('bad_template').sort()).toEqual([`${base}/chains/0/dag/nodes/2/config/text`, `${base}/chains/0/dag/nodes/3/config/v`].sort());
  expect(byCode('unknown_edge_endpoint')).toEqual([`${base}/chains/0/dag/edges/0/to`]);
  expect(byCode('cycle')).toEqual([`${base}/chains/0/dag/edges`]);
  expect(new Set(problems.map((p) => p.code))).toEqual(new Set(EVERY_CLASS));
}

describe('installed packs: direct install, list, uninstall; install checks on every path', () => {
  let t: TestApp;
  let publisher: string;
  let reader: string;
  let other: string;
  const good = chainPack('vendor.direct.good', {
    'vendor.direct.hello': { nodes: [{ id: 'hello', typeId: 'core.tool', config: { toolId: 'x-host-openwop-echo', arguments: { message: 'hi {{inputs.name}}' } } }] },
  });
  const installedCount = async () => Number((await t.ds.query(`SELECT count(*) AS n FROM "installed_artifact" WHERE "kind" = 'workflow-chain-pack'`))[0].n);

  beforeAll(async () => {
    t = await createTestApp();
    publisher = await t.key({ scopes: ['packs:publish', 'tools:read', 'runs:create', 'runs:read', 'proposals:propose', 'proposals:read', 'portability:import'] });
    reader = await t.key({ scopes: ['tools:read', 'runs:create', 'runs:read', 'proposals:propose', 'portability:import'] });
    other = await t.key({ tenant: 'other', scopes: ['packs:publish', 'tools:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('refuses an install without packs:publish (403) and without a credential (401), installing nothing', async () => {
    const denied = await t.http('POST', '/v1/installed-packs', { token: reader, body: good });
    expect([denied.status, denied.body.error]).toEqual([403, 'forbidden']);
    expect((await t.http('POST', '/v1/installed-packs', { body: good })).status).toBe(401);
    expect((await t.http('GET', '/v1/installed-packs')).status).toBe(401);
    expect(await installedCount()).toBe(0);
  });

  it('answers malformed bodies with the canonical 400', async () => {
    for (const rawBody of ['[1,2]', '"x"', '{"name":']) {
      const r = await t.http('POST', '/v1/installed-packs', { token: publisher, rawBody, headers: { 'content-type': 'application/json' } });
      expect([rawBody, r.status, r.body.error]).toEqual([rawBody, 400, 'validation_error']);
      expect(Object.keys(r.body).every((k) => ['error', 'message', 'details'].includes(k))).toBe(true);
    }
    const bad = await t.http('GET', '/v1/installed-packs?kind=prompt', { token: publisher });
    expect([bad.status, bad.body.error]).toEqual([400, 'validation_error']);
  });

  it('installs, lists, reads and uninstalls a pack; runs its chain; foreign and malformed ids are 404', async () => {
    const text = JSON.stringify(good, null, 2);
    const created = await t.http('POST', '/v1/installed-packs', { token: publisher, rawBody: text, headers: { 'content-type': 'application/json' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ outcome: 'created', pack: { kind: 'workflow-chain', name: 'vendor.direct.good', version: '1.0.0', origin: 'api', chains: [{ chainId: 'vendor.direct.hello' }] } });
    const id = created.body.pack.id as string;
    // stored byte for byte
    expect((await t.ds.query(`SELECT "bytes" FROM "installed_artifact" WHERE "id" = $1`, [id]))[0].bytes).toBe(text);
    const again = await t.http('POST', '/v1/installed-packs', { token: publisher, rawBody: text, headers: { 'content-type': 'application/json' } });
    expect([again.status, again.body.outcome, again.body.pack.id]).toEqual([200, 'unchanged', id]);

    const list = await t.http('GET', '/v1/installed-packs', { token: reader });
    expect(list.status).toBe(200);
    expect(list.body.packs.map((p: { id: string }) => p.id)).toEqual([id]);
    expect(list.body.nextCursor).toBeNull();
    expect((await t.http('GET', '/v1/installed-packs?kind=node', { token: reader })).body.packs).toEqual([]);
    expect((await t.http('GET', `/v1/installed-packs/${id}`, { token: reader })).body).toMatchObject({ id, name: 'vendor.direct.good' });

    const run = await t.http('POST', '/v1/runs', { token: publisher, body: { workflowId: 'vendor.direct.hello', inputs: { name: 'Ada' } } });
    expect(run.status).toBe(201);

    // another tenant neither sees nor removes it; a malformed id names nothing
    expect((await t.http('GET', '/v1/installed-packs', { token: other })).body.packs).toEqual([]);
    expect((await t.http('GET', `/v1/installed-packs/${id}`, { token: other })).status).toBe(404);
    expect((await t.http('DELETE', `/v1/installed-packs/${id}`, { token: other })).status).toBe(404);
    expect((await t.http('DELETE', '/v1/installed-packs/not-a-uuid', { token: publisher })).status).toBe(404);
    expect((await t.http('DELETE', `/v1/installed-packs/${id}`, { token: reader })).status).toBe(403);

    // a workspace credential sees the tenant's pack but does not remove it
    const ws = await t.key({ workspace: 'ws-1', scopes: ['packs:publish', 'tools:read'] });
    expect((await t.http('GET', '/v1/installed-packs', { token: ws })).body.packs.map((p: { id: string }) => p.id)).toEqual([id]);
    expect((await t.http('DELETE', `/v1/installed-packs/${id}`, { token: ws })).status).toBe(403);

    const removed = await t.http('DELETE', `/v1/installed-packs/${id}`, { token: publisher });
    expect([removed.status, removed.body.id]).toEqual([200, id]);
    expect((await t.http('GET', `/v1/installed-packs/${id}`, { token: reader })).status).toBe(404);
    expect((await t.http('POST', '/v1/runs', { token: publisher, body: { workflowId: 'vendor.direct.hello' } })).status).toBe(404);
  });

  it('direct install: 422 pack_invalid listing every problem, nothing installed', async () => {
    const before = await installedCount();
    const r = await t.http('POST', '/v1/installed-packs', { token: publisher, body: brokenPack('vendor.broken.direct') });
    expect([r.status, r.body.error]).toEqual([422, 'pack_invalid']);
    expectEveryProblem(r.body.details.problems, '');
    expect(await installedCount()).toBe(before);
    // a manifest schema problem is listed with the others
    const noVersion = { ...brokenPack('vendor.broken.schema'), version: undefined };
    const s = await t.http('POST', '/v1/installed-packs', { token: publisher, body: noVersion });
    expect(s.status).toBe(422);
    expect(s.body.details.problems.map((p: { code: string }) => p.code)).toEqual(expect.arrayContaining(['invalid_manifest', ...EVERY_CLASS]));
    expect(await installedCount()).toBe(before);
  });

  it('a tool missing from the catalog is unknown; a workflow: tool of a chain in the same pack is fine', async () => {
    const parentChild = chainPack('vendor.direct.family', {
      'vendor.direct.child': { nodes: [{ id: 'c', typeId: 'core.noop', config: { v: 1 } }] },
      'vendor.direct.parent': { nodes: [{ id: 'p', typeId: 'core.tool', config: { toolId: 'workflow:vendor.direct.child', arguments: {} } }] },
    });
    const r = await t.http('POST', '/v1/installed-packs', { token: publisher, body: parentChild });
    expect(r.status).toBe(201);
    const orphan = chainPack('vendor.direct.orphan', { 'vendor.direct.o': { nodes: [{ id: 'p', typeId: 'core.tool', config: { toolId: 'workflow:vendor.direct.nowhere' } }] } });
    const refused = await t.http('POST', '/v1/installed-packs', { token: publisher, body: orphan });
    expect([refused.status, refused.body.details.problems.map((p: { code: string }) => p.code)]).toEqual([422, ['unknown_tool']]);
  });

  it('proposal apply: 422 workflow_invalid listing every problem, the proposal stays open and nothing is installed', async () => {
    const before = await installedCount();
    const created = await t.http('POST', '/v1/proposals', {
      token: publisher,
      body: { kind: 'workflow-chain-pack', provenance: { sourceRunIds: ['manual'] }, artifact: brokenPack('vendor.broken.proposal') },
    });
    expect(created.status).toBe(201);
    const applied = await t.http('POST', `/v1/proposals/${created.body.id}/apply`, { token: publisher, body: {} });
    expect([applied.status, applied.body.error]).toEqual([422, 'workflow_invalid']);
    expectEveryProblem(applied.body.details.problems, '');
    expect((await t.http('GET', `/v1/proposals/${created.body.id}`, { token: publisher })).body.state).toBe('draft');
    expect(await installedCount()).toBe(before);
  });

  it('bundle import: 422 bundle_item_invalid listing every problem (dry run: a conflict), nothing installed', async () => {
    const before = await installedCount();
    const bundle = {
      bundleVersion: '1',
      source: { origin: 'test' },
      items: [
        { kind: 'pack', ref: 'fine', payload: chainPack('vendor.import.fine', { 'vendor.import.ok': { nodes: [{ id: 'n', typeId: 'core.noop' }] } }) },
        { kind: 'pack', ref: 'broken', payload: brokenPack('vendor.broken.import') },
      ],
    };
    const plan = await t.http('POST', '/v1/import?dryRun=true', { token: publisher, body: bundle });
    expect(plan.status).toBe(200);
    expect(plan.body.conflicts).toEqual([expect.objectContaining({ ref: 'broken', kind: 'pack' })]);
    const r = await t.http('POST', '/v1/import', { token: publisher, body: bundle });
    expect([r.status, r.body.error]).toEqual([422, 'bundle_item_invalid']);
    expectEveryProblem(r.body.details.problems, '/items/1/payload');
    expect(await installedCount()).toBe(before);
  });
});
