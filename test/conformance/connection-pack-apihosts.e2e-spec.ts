/**
 * What the official `connection-pack-apihosts` scenario (RFC 0120) asserts: the apihosts fixture
 * validates and needs `apiHosts` (openapi reach), malformed entries fail the pattern, and the
 * host's egress check allows only exact or dot-anchored suffix matches.
 */
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { checkEgress } from '../../src/capabilities/connections/packs/egress-check';
import { ConformanceHost, loadFixture, startConformanceHost } from '../connections/conformance-driver';

describe('conformance: connection-pack-apihosts (server-free legs)', () => {
  const schemas = SchemaRegistry.shared();

  it('the apihosts fixture validates; without apiHosts it fails `required`', () => {
    expect(schemas.validate('connection-pack-manifest', loadFixture('apihosts-valid'))).toEqual([]);
    const m = loadFixture('apihosts-valid');
    delete m.provider.apiHosts;
    expect(schemas.validate('connection-pack-manifest', m)).toContainEqual(expect.objectContaining({ keyword: 'required', path: '/provider/apiHosts' }));
  });

  it('the github fixture (mcp reach, no apiHosts) validates', () => {
    const m = loadFixture('github');
    expect(m.provider.apiHosts).toBeUndefined();
    expect(schemas.validate('connection-pack-manifest', m)).toEqual([]);
  });

  it.each(['127.0.0.1', '10.0.0.1', '*.facebook.com', 'graph.facebook.com:8443', 'facebook', 'Facebook.com'])('apiHosts entry %s fails the pattern', (host) => {
    const m = loadFixture('apihosts-valid');
    m.provider.apiHosts = [host];
    expect(schemas.validate('connection-pack-manifest', m).some((v) => v.keyword === 'pattern')).toBe(true);
  });

  it('matching is dot-anchored, never a substring', () => {
    expect(checkEgress(['example.com'], 'api.example.com').allowed).toBe(true);
    for (const h of ['notexample.com', 'evil.com', 'example.com.evil.com', 'myexample.com']) expect(checkEgress(['example.com'], h).allowed).toBe(false);
    expect(checkEgress(['googleads.googleapis.com'], 'bigquery.googleapis.com').allowed).toBe(false);
  });
});

describe('conformance: connection-pack-apihosts (behavioral)', () => {
  let h: ConformanceHost;

  beforeAll(async () => {
    h = await startConformanceHost();
  });
  afterAll(async () => {
    await h?.t.close();
  });

  it('allows graph.facebook.com and refuses look-alikes', async () => {
    expect(await h.packsSupported()).toBe(true);
    expect((await h.seam('install', { manifest: loadFixture('apihosts-valid') })).body.installed).toBe(true);
    const ok = await h.seam('egress-check', { provider: 'meta-ads', requestHost: 'graph.facebook.com' });
    expect(ok.status).toBe(200);
    expect(ok.body.allowed).toBe(true);
    for (const requestHost of ['evil.com', 'notfacebook.com', 'facebook.com.evil.com']) {
      const r = await h.seam('egress-check', { provider: 'meta-ads', requestHost });
      expect({ requestHost, allowed: r.body.allowed }).toEqual({ requestHost, allowed: false });
    }
  });

  it('fails closed for a provider without apiHosts and for an unknown provider', async () => {
    await h.seam('install', { manifest: loadFixture('github') });
    expect((await h.seam('egress-check', { provider: 'github', requestHost: 'api.github.com' })).body).toEqual({ allowed: false, code: 'no_api_hosts' });
    expect((await h.seam('egress-check', { provider: 'conformance-nonexistent-provider-xyz', requestHost: 'a.example.com' })).body).toEqual({ allowed: false, code: 'connection_provider_unresolved' });
    const bad = await h.seam('egress-check', { provider: 'meta-ads' });
    expect(bad.status).toBe(400);
  });
});
