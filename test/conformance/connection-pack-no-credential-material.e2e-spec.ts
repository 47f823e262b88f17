/**
 * What the official `connection-pack-no-credential-material` scenario (RFC 0095 clause 2) asserts:
 * blocklisted names fail the manifest schema wherever they sit, the token ENDPOINT is exempt, and
 * the host's install refuses a planted client secret as `connection_pack_credential_material`
 * (the scan runs before schema validation).
 */
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { ConformanceHost, loadFixture, startConformanceHost } from '../connections/conformance-driver';

const BLOCKLIST = ['clientSecret', 'client_secret', 'apiKey', 'api_key', 'token', 'accessToken', 'refreshToken', 'password', 'privateKey', 'secret'];

describe('conformance: connection-pack-no-credential-material (server-free legs)', () => {
  const schemas = SchemaRegistry.shared();

  it.each(BLOCKLIST)('%s fails schema validation at the root, under provider and under provider.auth', (key) => {
    for (const where of ['root', 'provider', 'auth']) {
      const m = loadFixture('github');
      const target = where === 'root' ? m : where === 'provider' ? m.provider : m.provider.auth;
      target[key] = 'x';
      expect(schemas.validate('connection-pack-manifest', m)).not.toEqual([]);
    }
  });

  it('the fixture with its provider.auth.endpoints.token URL validates', () => {
    const m = loadFixture('github');
    expect(typeof m.provider.auth.endpoints.token).toBe('string');
    expect(schemas.validate('connection-pack-manifest', m)).toEqual([]);
  });
});

describe('conformance: connection-pack-no-credential-material (behavioral)', () => {
  let h: ConformanceHost;

  beforeAll(async () => {
    h = await startConformanceHost();
  });
  afterAll(async () => {
    await h?.t.close();
  });

  it('refuses a planted client secret with connection_pack_credential_material', async () => {
    expect(await h.packsSupported()).toBe(true);
    const m = loadFixture('github');
    m.provider.auth.clientSecret = 'ghs_conformance_canary';
    const r = await h.seam('install', { manifest: m });
    expect(r.body.installed).toBe(false);
    expect(r.body.errors.map((e: { code: string }) => e.code)).toContain('connection_pack_credential_material');
    expect(r.body.errors).toContainEqual(expect.objectContaining({ code: 'connection_pack_credential_material', path: '/provider/auth/clientSecret' }));
    expect(r.text).not.toContain('ghs_conformance_canary');
    expect(h.t.logs.filter((l) => l.includes('ghs_conformance_canary'))).toEqual([]);
  });

  it('reports credential material even when the manifest is otherwise malformed', async () => {
    const r = await h.seam('install', { manifest: { kind: 'node', provider: { endpoints: { token: 'x' } } } });
    expect(r.body).toMatchObject({ installed: false, errors: [{ code: 'connection_pack_credential_material', path: '/provider/endpoints/token' }] });
  });

  it('reports schema failures with their paths, and a missing manifest is 400', async () => {
    const m = loadFixture('github');
    m.provider.auth.endpoints.token = 'http://github.com/login/oauth/access_token';
    const r = await h.seam('install', { manifest: m });
    expect(r.body.installed).toBe(false);
    expect(r.body.errors).toContainEqual(expect.objectContaining({ code: 'validation_error', path: '/provider/auth/endpoints/token' }));
    for (const body of [{}, { manifest: 'x' }, { manifest: [] }]) {
      const bad = await h.seam('install', body);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('validation_error');
    }
  });
});
