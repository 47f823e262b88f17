/**
 * Run artifacts: a node stores a file (`core.artifact`, a plugin's `ctx.artifacts.put`), the run's
 * log carries `artifact.created` (valid against the official payload schema), the snapshot lists it
 * (still a valid RunSnapshot), `GET /v1/runs/{runId}/artifacts/{artifactId}` serves its bytes with
 * its media type and length behind the route's auth order (401, then 403 without `artifacts:read`,
 * then 404 for unknown or foreign), the size cap fails the node with `artifact_too_large`,
 * retention deletes artifacts with their run, and a plugin object store replaces the database store.
 */
import * as path from 'node:path';
import { RetentionService } from '../../src/platform/retention/retention.service';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { memoryObjects } from '../fixtures/plugins/artifact-store-plugin';
import { createTestApp, TestApp } from '../support/test-app';
import { expectSchemaValid, installChains, runEvents, waitForStatus } from './run-kit';

const CHAINS = {
  'vendor.test.report': {
    nodes: [
      { id: 'prep', typeId: 'core.noop', config: { who: '{{inputs.who}}' } },
      { id: 'report', typeId: 'core.artifact', config: { name: 'report.md', contentType: 'text/markdown; charset=utf-8', content: '# Report for {{nodes.prep.who}}\n', summary: 'the report' } },
      { id: 'data', typeId: 'core.artifact', config: { name: 'data.json', content: { who: '{{inputs.who}}', n: 2 } } },
    ],
    edges: [
      { from: 'prep', to: 'report' },
      { from: 'report', to: 'data' },
    ],
  },
  'vendor.test.big': { nodes: [{ id: 'big', typeId: 'core.artifact', config: { name: 'big.txt', content: '{{inputs.text}}' } }, { id: 'after', typeId: 'core.noop' }], edges: [{ from: 'big', to: 'after' }] },
};

async function produce(t: TestApp, key: string, workflowId: string, inputs: Record<string, unknown>): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId, inputs } });
  expect(r.status).toBe(201);
  return waitForStatus(t, key, r.body.runId, ['completed', 'failed']);
}

describe('runs: artifacts in the database store', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_ARTIFACT_MAX_BYTES: '1000' } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'artifacts:read'] });
    await installChains(t, 'default', 'vendor.test.artifact-chains', CHAINS);
    await installChains(t, 'other', 'vendor.test.artifact-chains', CHAINS);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('stores a node artifact, emits artifact.created, lists it on the snapshot and serves its bytes', async () => {
    const done = await produce(t, key, 'vendor.test.report', { who: 'Ada' });
    expect(done.status).toBe('completed');
    expect(SchemaRegistry.shared().validate('run-snapshot', done)).toEqual([]);
    expect(done.artifacts).toHaveLength(2);
    const [report, data] = done.artifacts;
    expect(report).toEqual({ artifactId: expect.any(String), name: 'report.md', contentType: 'text/markdown; charset=utf-8', sizeBytes: Buffer.byteLength('# Report for Ada\n'), nodeId: 'report', createdAt: expect.any(String) });
    expect(data).toMatchObject({ name: 'data.json', contentType: 'application/json', nodeId: 'data' });
    expect(Object.keys(report).sort()).toEqual(['artifactId', 'contentType', 'createdAt', 'name', 'nodeId', 'sizeBytes']);
    expect(done.nodeStates.report.status).toBe('completed');

    const events = await runEvents(t, key, done.runId);
    expectSchemaValid(events); // artifact.created against run-event-payloads.schema.json#/$defs/artifactCreated
    const created = events.filter((e) => e.type === 'artifact.created');
    expect(created.map((e) => e.payload.artifactId)).toEqual([report.artifactId, data.artifactId]);
    expect(created[0]).toMatchObject({ nodeId: 'report', payload: { artifactType: 'file', nodeId: 'report', registered: false, summary: 'the report', sizeBytes: report.sizeBytes } });
    const types = events.map((e) => e.type);
    expect(types.indexOf('artifact.created')).toBeLessThan(types.lastIndexOf('node.completed'));
    // The official payload schema, directly, so a drift in the kit's mapping cannot hide a bad payload.
    const registry = SchemaRegistry.shared();
    for (const e of created) expect(registry.validateWith({ $ref: 'https://openwop.dev/spec/v1/run-event-payloads.schema.json#/$defs/artifactCreated' }, e.payload)).toEqual([]);
    expect(registry.validateWith({ $ref: 'https://openwop.dev/spec/v1/run-event-payloads.schema.json#/$defs/artifactCreated' }, { nodeId: 'x' })).not.toEqual([]);

    const got = await t.http('GET', `/v1/runs/${done.runId}/artifacts/${report.artifactId}`, { token: key });
    expect(got.status).toBe(200);
    expect(got.headers['content-type']).toBe('text/markdown; charset=utf-8');
    expect(got.headers['content-length']).toBe(String(report.sizeBytes));
    expect(got.headers['x-content-type-options']).toBe('nosniff');
    expect(got.headers['content-disposition']).toBe(`attachment; filename*=UTF-8''report.md`);
    expect(got.text).toBe('# Report for Ada\n');
    const json = await t.http('GET', `/v1/runs/${done.runId}/artifacts/${data.artifactId}`, { token: key });
    expect(json.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(json.text)).toEqual({ who: 'Ada', n: 2 });
    // The node answered the artifact's reference as outputs.
    expect(done.outputs ?? {}).toBeDefined();
  });

  it('answers 401 before anything, 403 without artifacts:read, 404 for unknown ids and other tenants', async () => {
    const done = await produce(t, key, 'vendor.test.report', { who: 'Bo' });
    const url = `/v1/runs/${done.runId}/artifacts/${done.artifacts[0].artifactId}`;
    const anon = await t.http('GET', url);
    expect([anon.status, anon.body.error]).toEqual([401, 'unauthenticated']);
    expect((await t.http('GET', url, { token: 'owk_nope' })).status).toBe(401);

    const noScope = await t.key({ scopes: ['runs:read'] });
    const forbidden = await t.http('GET', url, { token: noScope });
    expect([forbidden.status, forbidden.body.error]).toEqual([403, 'forbidden']);
    expect(forbidden.text).not.toContain('Report');

    const foreign = await t.key({ tenant: 'other', scopes: ['runs:read', 'artifacts:read'] });
    const leak = await t.http('GET', url, { token: foreign });
    expect([leak.status, leak.body.error]).toEqual([404, 'not_found']);
    // The other tenant's own run cannot reach this artifact either (the artifact is bound to its run and tenant).
    const otherCreate = await t.key({ tenant: 'other', scopes: ['runs:create', 'runs:read', 'artifacts:read'] });
    const theirs = await produce(t, otherCreate, 'vendor.test.report', { who: 'Cy' });
    expect((await t.http('GET', `/v1/runs/${theirs.runId}/artifacts/${done.artifacts[0].artifactId}`, { token: otherCreate })).status).toBe(404);
    expect((await t.http('GET', `/v1/runs/${done.runId}/artifacts/${theirs.artifacts[0].artifactId}`, { token: key })).status).toBe(404);
    // ...and an artifact of another run of the same tenant is not served under this run.
    const second = await produce(t, key, 'vendor.test.report', { who: 'Di' });
    expect((await t.http('GET', `/v1/runs/${second.runId}/artifacts/${done.artifacts[0].artifactId}`, { token: key })).status).toBe(404);

    for (const bad of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const r = await t.http('GET', `/v1/runs/${done.runId}/artifacts/${bad}`, { token: key });
      expect([r.status, r.body.error]).toEqual([404, 'not_found']);
    }
    expect((await t.http('GET', `/v1/runs/00000000-0000-4000-8000-000000000000/artifacts/${done.artifacts[0].artifactId}`, { token: key })).status).toBe(404);
  });

  it('fails the node artifact_too_large over OPENWOP_ARTIFACT_MAX_BYTES, storing nothing', async () => {
    const fits = await produce(t, key, 'vendor.test.big', { text: 'x'.repeat(1000) });
    expect(fits.status).toBe('completed');
    expect(fits.artifacts.map((a: { sizeBytes: number }) => a.sizeBytes)).toEqual([1000]);
    const done = await produce(t, key, 'vendor.test.big', { text: 'x'.repeat(1001) });
    expect([done.status, done.error?.code]).toEqual(['failed', 'artifact_too_large']);
    expect(done.nodeStates.big.error.code).toBe('artifact_too_large');
    expect(done.nodeStates.big.error.message).toMatch(/1001 bytes.*at most 1000/);
    expect(done.artifacts).toEqual([]);
    expect((await runEvents(t, key, done.runId)).some((e) => e.type === 'artifact.created')).toBe(false);
    expect(SchemaRegistry.shared().validate('run-snapshot', done)).toEqual([]);
  });

  it('deletes a run’s artifacts with the run (retention)', async () => {
    const done = await produce(t, key, 'vendor.test.report', { who: 'Old' });
    const kept = await produce(t, key, 'vendor.test.report', { who: 'New' });
    const count = async (runId: string) => Number(((await t.ds.query(`SELECT count(*) AS n FROM "run_artifact" WHERE "run_id" = $1`, [runId])) as Array<{ n: string }>)[0].n);
    expect(await count(done.runId)).toBe(2);
    await t.ds.query(`UPDATE "run" SET "completed_at" = now() - interval '90 days', "created_at" = now() - interval '90 days' WHERE "id" = $1`, [done.runId]);
    const counts = await t.app.get(RetentionService).sweep();
    expect(counts.artifacts).toBeGreaterThanOrEqual(2);
    expect(await count(done.runId)).toBe(0);
    expect(await count(kept.runId)).toBe(2);
    expect((await t.http('GET', `/v1/runs/${done.runId}/artifacts/${done.artifacts[0].artifactId}`, { token: key })).status).toBe(404);
    expect((await t.http('GET', `/v1/runs/${kept.runId}/artifacts/${kept.artifacts[0].artifactId}`, { token: key })).status).toBe(200);
  });

  it('refuses a core.artifact node without a name or content when the run is created', async () => {
    await installChains(t, 'default', 'vendor.test.bad-artifacts', { 'vendor.test.nameless': { nodes: [{ id: 'a', typeId: 'core.artifact', config: { content: 'x' } }] } }).catch(() => undefined);
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.nameless' } });
    expect(r.status).not.toBe(201);
  });
});

describe('runs: artifacts in a plugin object store', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_PLUGINS: path.join(__dirname, '../fixtures/plugins/artifact-store-plugin.ts') } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'artifacts:read'] });
    await installChains(t, 'default', 'vendor.test.artifact-chains', { ...CHAINS, 'vendor.test.pixel': { nodes: [{ id: 'px', typeId: 'vendor.test.png' }] } });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('keeps the bytes in the plugin store (not the database) and serves them from there', async () => {
    const before = memoryObjects().size;
    const done = await produce(t, key, 'vendor.test.pixel', {});
    expect(done.status).toBe('completed');
    const [a] = done.artifacts;
    expect(a).toMatchObject({ name: 'pixel.png', contentType: 'image/png', sizeBytes: 10, nodeId: 'px' });
    expect(memoryObjects().size).toBe(before + 1);
    const [row] = (await t.ds.query(`SELECT "store", "store_ref", "content", "metadata" FROM "run_artifact" WHERE "id" = $1`, [a.artifactId])) as Array<Record<string, unknown>>;
    expect(row).toEqual({ store: 'vendor.test.memory', store_ref: `objects/default/${done.runId}/${a.artifactId}`, content: null, metadata: { width: 1 } });

    const got = await t.app.inject({ method: 'GET', url: `/v1/runs/${done.runId}/artifacts/${a.artifactId}`, headers: { authorization: `Bearer ${key}` } });
    expect(got.statusCode).toBe(200);
    expect(got.headers['content-type']).toBe('image/png');
    expect(got.headers['content-length']).toBe('10');
    expect(got.rawPayload.equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff]))).toBe(true);

    // What the store answers is what is served: the bytes come from the store, not from a database copy.
    memoryObjects().get(row.store_ref as string)!.data = Buffer.from('changed');
    const again = await t.http('GET', `/v1/runs/${done.runId}/artifacts/${a.artifactId}`, { token: key });
    expect([again.status, again.text, again.headers['content-length']]).toEqual([200, 'changed', '7']);
    memoryObjects().delete(row.store_ref as string);
    expect((await t.http('GET', `/v1/runs/${done.runId}/artifacts/${a.artifactId}`, { token: key })).status).toBe(404);
  });

  it('stores core.artifact content in the plugin store too', async () => {
    const done = await produce(t, key, 'vendor.test.report', { who: 'Eve' });
    const rows = (await t.ds.query(`SELECT "store", "content" IS NULL AS empty FROM "run_artifact" WHERE "run_id" = $1`, [done.runId])) as Array<{ store: string; empty: boolean }>;
    expect(rows).toEqual([
      { store: 'vendor.test.memory', empty: true },
      { store: 'vendor.test.memory', empty: true },
    ]);
    const got = await t.http('GET', `/v1/runs/${done.runId}/artifacts/${done.artifacts[0].artifactId}`, { token: key });
    expect([got.status, got.text]).toEqual([200, '# Report for Eve\n']);
  });

  it('retention deletes the plugin store’s objects after the run’s rows', async () => {
    const done = await produce(t, key, 'vendor.test.report', { who: 'Gone' });
    const refs = ((await t.ds.query(`SELECT "store_ref" FROM "run_artifact" WHERE "run_id" = $1`, [done.runId])) as Array<{ store_ref: string }>).map((r) => r.store_ref);
    expect(refs).toHaveLength(2);
    for (const r of refs) expect(memoryObjects().has(r)).toBe(true);
    await t.ds.query(`UPDATE "run" SET "completed_at" = now() - interval '90 days', "created_at" = now() - interval '90 days' WHERE "id" = $1`, [done.runId]);
    const counts = await t.app.get(RetentionService).sweep();
    expect(counts.artifacts).toBe(2);
    for (const r of refs) expect(memoryObjects().has(r)).toBe(false);
    expect((await t.ds.query(`SELECT 1 FROM "run_artifact" WHERE "run_id" = $1`, [done.runId])) as unknown[]).toEqual([]);
  });
});
