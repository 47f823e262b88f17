/**
 * What the official `connection-provider-resolution` scenario (RFC 0095 clause 6) asserts: an
 * installed pack resolves as `source: "pack"`, an unknown id is `connection_provider_unresolved`, a
 * prerelease pack below a (simulated) built-in is `connection_provider_conflict`, and a rejected
 * pack does not block the next install.
 */
import { ConformanceHost, loadFixture, startConformanceHost } from '../connections/conformance-driver';

describe('conformance: connection-provider-resolution', () => {
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

  it('installs the github pack and resolves it from the pack; an unknown provider is unresolved', async () => {
    const install = await h.seam('install', { manifest: loadFixture('github') });
    expect(install.status).toBe(200);
    expect(install.body.installed).toBe(true);
    const resolved = await h.seam('resolve', { provider: 'github' });
    expect(resolved.status).toBe(200);
    expect(resolved.body.resolved).toBe(true);
    expect(resolved.body.source).toBe('pack');
    const unknown = await h.seam('resolve', { provider: 'conformance-nonexistent-provider-xyz' });
    expect(unknown.body.resolved).toBe(false);
    expect(unknown.body.code).toBe('connection_provider_unresolved');
  });

  it('a prerelease pack below the simulated built-in version is a conflict (SemVer §11)', async () => {
    const m = loadFixture('github');
    m.version = '1.0.0-alpha.1';
    m.name = 'core.openwop.connections.conformance-prerelease-probe';
    m.provider.id = 'conformance-prerelease-probe';
    expect((await h.seam('install', { manifest: m })).body.installed).toBe(true);
    const r = await h.seam('resolve', { provider: 'conformance-prerelease-probe', simulateBuiltinVersion: '1.0.0' });
    expect(r.body.code).toBe('connection_provider_conflict');
    expect(r.body.resolved).toBe(false);
    // At or below the pack's version the pack wins; with no pack the simulated built-in resolves.
    expect((await h.seam('resolve', { provider: 'conformance-prerelease-probe', simulateBuiltinVersion: '1.0.0-alpha.1' })).body).toMatchObject({ resolved: true, source: 'pack' });
    expect((await h.seam('resolve', { provider: 'conformance-nonexistent-provider-xyz', simulateBuiltinVersion: '2.0.0' })).body).toEqual({ resolved: true, providerId: 'conformance-nonexistent-provider-xyz', source: 'builtin', version: '2.0.0' });
  });

  it('a rejected pack changes nothing and does not block the next install (rejection isolation)', async () => {
    const probe = loadFixture('github');
    probe.name = 'core.openwop.connections.conformance-isolation-probe';
    probe.provider.id = 'conformance-isolation-probe';
    probe.provider.auth.clientSecret = 'ghs_conformance_canary';
    const refused = await h.seam('install', { manifest: probe });
    expect(refused.body.installed).toBe(false);
    expect(refused.text).not.toContain('ghs_conformance_canary');
    expect((await h.seam('resolve', { provider: 'conformance-isolation-probe' })).body.code).toBe('connection_provider_unresolved');
    const survivor = loadFixture('github');
    survivor.name = 'core.openwop.connections.conformance-isolation-survivor';
    survivor.provider.id = 'conformance-isolation-survivor';
    expect((await h.seam('install', { manifest: survivor })).body.installed).toBe(true);
  });

  it('refuses a second pack claiming an installed provider id, and re-installing the same pack is idempotent', async () => {
    const rival = loadFixture('github');
    rival.name = 'core.openwop.connections.github-rival';
    const r = await h.seam('install', { manifest: rival });
    expect(r.body.installed).toBe(false);
    expect(r.body.errors.map((e: { code: string }) => e.code)).toContain('connection_provider_conflict');
    expect((await h.seam('install', { manifest: loadFixture('github') })).body.installed).toBe(true);
    expect((await h.seam('resolve', { provider: 'core.openwop.connections.github#github' })).body).toMatchObject({ resolved: true, source: 'pack' });
    expect((await h.seam('resolve', { provider: 'core.openwop.connections.github-rival#github' })).body.code).toBe('connection_provider_unresolved');
  });

  it('answers a malformed resolve body with 400 validation_error', async () => {
    for (const body of [{}, { provider: 42 }, { provider: 'github', simulateBuiltinVersion: 'one' }, { provider: 'github', extra: true }]) {
      const r = await h.seam('resolve', body);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('validation_error');
    }
  });

  it('serves no seam without credentials and none when seams are off', async () => {
    for (const route of ['install', 'resolve', 'consent-plan', 'egress-check']) {
      const r = await h.t.http('POST', `/v1/host/sample/connection-packs/${route}`, { body: { provider: 'github' } });
      expect([401, 403, 404]).toContain(r.status);
    }
    const { createTestApp } = await import('../support/test-app');
    const off = await createTestApp();
    try {
      const key = await off.key({ roles: ['admin'] });
      const r = await off.http('POST', '/v1/host/sample/connection-packs/resolve', { token: key, body: { provider: 'github' } });
      expect(r.status).toBe(404);
      expect(r.body.error).toBe('not_found');
    } finally {
      await off.close();
    }
  });
});
