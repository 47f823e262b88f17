/**
 * What the official `connection-pack-write-reconsent` scenario (RFC 0095 clause 4) asserts: read
 * groups are the first consent step, write groups a separate later step, and a read-only request
 * is exactly one step.
 */
import { ConformanceHost, loadFixture, startConformanceHost } from '../connections/conformance-driver';

describe('conformance: connection-pack-write-reconsent', () => {
  let h: ConformanceHost;

  beforeAll(async () => {
    h = await startConformanceHost();
  });
  afterAll(async () => {
    await h?.t.close();
  });

  it('is gated on connections.packsSupported, which the host advertises', async () => {
    expect(await h.packsSupported()).toBe(true);
  });

  it('tolerates a repeated install of the fixture', async () => {
    expect((await h.seam('install', { manifest: loadFixture('github') })).body.installed).toBe(true);
    expect((await h.seam('install', { manifest: loadFixture('github') })).body.installed).toBe(true);
  });

  it('puts write groups in a separate step after the read step', async () => {
    const r = await h.seam('consent-plan', { provider: 'github', requested: ['read', 'write'] });
    expect(r.status).toBe(200);
    expect(r.body.steps.length).toBeGreaterThanOrEqual(2);
    const first = r.body.steps[0];
    expect(first.includesWrite).not.toBe(true);
    expect((first.groups ?? []).some((g: { access: string }) => g.access === 'write')).toBe(false);
    const firstWrite = r.body.steps.findIndex((s: { includesWrite?: boolean }) => s.includesWrite === true);
    expect(firstWrite).toBeGreaterThan(0);
    expect(r.body.steps[firstWrite].groups.map((g: { key: string; access: string }) => [g.key, g.access])).toEqual([['repo.write', 'write']]);
  });

  it('a read-only request is exactly one step', async () => {
    const r = await h.seam('consent-plan', { provider: 'github', requested: ['read'] });
    expect(r.status).toBe(200);
    expect(r.body.steps).toHaveLength(1);
    expect(r.body.steps[0].groups.every((g: { access: string }) => g.access === 'read')).toBe(true);
  });

  it('an unresolvable provider is 422 connection_provider_unresolved; a malformed request is 400', async () => {
    const r = await h.seam('consent-plan', { provider: 'conformance-nonexistent-provider-xyz', requested: ['read'] });
    expect(r.status).toBe(422);
    expect(r.body.error).toBe('connection_provider_unresolved');
    for (const body of [{ provider: 'github' }, { provider: 'github', requested: [] }, { provider: 'github', requested: ['admin'] }, { provider: 'github', requested: 'read' }]) {
      const bad = await h.seam('consent-plan', body);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('validation_error');
    }
  });
});
