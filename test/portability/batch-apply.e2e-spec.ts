/**
 * Batched import apply through a registry-backed kind (prompt templates): racing imports still
 * create each item once, a re-import reports exactly the changed items as updated, dependsOn levels
 * are honoured, and the registry's batch install agrees with the single install on bytes and refs.
 */
import { ArtifactRegistryService, artifactText, textRef } from '../../src/platform/artifacts/artifact-registry.service';
import { createTestApp, TestApp } from '../support/test-app';

const template = (i: number, text = `Template ${i}`) => ({ templateId: `batch.t-${i}`, version: '1.0.0', kind: 'system', text });
const bundleOf = (items: unknown[]) => ({ bundleVersion: '1', source: { origin: 'test:batch' }, items });

describe('portability: batched apply', () => {
  let t: TestApp;
  let registry: ArtifactRegistryService;

  beforeAll(async () => {
    t = await createTestApp();
    registry = t.moduleRef.get(ArtifactRegistryService);
  });
  afterAll(async () => t?.close());

  it('racing applies of a large bundle create each item exactly once', async () => {
    const key = await t.key({ tenant: 'batch-race', scopes: ['portability:import', 'packs:publish'] });
    const bundle = bundleOf(Array.from({ length: 300 }, (_, i) => ({ kind: 'prompt-template', ref: `t${i}`, payload: template(i) })));
    const results = await Promise.all([1, 2, 3].map(() => t.http('POST', '/v1/import', { token: key, body: bundle })));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(results.reduce((n, r) => n + r.body.counts.created, 0)).toBe(300);
    expect(results.reduce((n, r) => n + r.body.counts.skipped, 0)).toBe(600);
    expect(await registry.list({ tenant: 'batch-race' }, ['prompt-template'])).toHaveLength(300);
  });

  it('a re-import updates exactly the changed items and keeps the item order of the answer', async () => {
    const key = await t.key({ tenant: 'batch-update', scopes: ['portability:import', 'packs:publish'] });
    const items = Array.from({ length: 50 }, (_, i) => ({ kind: 'prompt-template', ref: `t${i}`, payload: template(i) }));
    expect((await t.http('POST', '/v1/import', { token: key, body: bundleOf(items) })).body.counts).toMatchObject({ created: 50 });
    const changed = items.map((it, i) => (i % 10 === 3 ? { ...it, payload: template(i, 'changed') } : it));
    const r = await t.http('POST', '/v1/import', { token: key, body: bundleOf(changed) });
    expect(r.status).toBe(200);
    expect(r.body.counts).toEqual({ created: 0, updated: 5, skipped: 45, failed: 0 });
    expect(r.body.items.map((i: { ref: string }) => i.ref)).toEqual(items.map((i) => i.ref));
    expect(r.body.items.filter((i: { result: string }) => i.result === 'updated').map((i: { ref: string }) => i.ref)).toEqual(['t3', 't13', 't23', 't33', 't43']);
    const updated = await registry.get({ tenant: 'batch-update' }, 'prompt-template', 'batch.t-13');
    expect(updated?.content.text).toBe('changed');
    expect(updated?.ref).toBe(textRef(artifactText(template(13, 'changed'))));
    expect(await registry.bytes({ tenant: 'batch-update' }, 'prompt-template', 'batch.t-13')).toBe(artifactText(template(13, 'changed')));
  });

  it('installMany matches install: same bytes, refs and outcomes, in entry order', async () => {
    const scope = { tenant: 'batch-registry', principal: 'p' };
    await registry.install('prompt-template', template(1), scope, 'api');
    await registry.install('prompt-template', template(2), scope, 'api');
    const results = await registry.installMany('prompt-template', [{ content: template(3) }, { content: template(2, 'new') }, { content: template(1) }], scope, 'api');
    expect(results.map((r) => [r.artifact.name, r.outcome])).toEqual([
      ['batch.t-3', 'created'],
      ['batch.t-2', 'updated'],
      ['batch.t-1', 'unchanged'],
    ]);
    for (const r of results) {
      expect(r.artifact.ref).toBe(textRef(await registry.bytes(scope, 'prompt-template', r.artifact.name) as string));
      expect(await registry.get(scope, 'prompt-template', r.artifact.name)).toEqual(r.artifact);
    }
    await expect(registry.installMany('prompt-template', [{ content: template(4) }, { content: { templateId: 'x' } }], scope, 'api')).rejects.toMatchObject({ status: 422 });
    expect(await registry.get(scope, 'prompt-template', 'batch.t-4')).toBeUndefined();
  });
});
