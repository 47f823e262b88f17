import { startOidcProvider, OidcProvider } from '../support/oidc-provider';
import { createTestApp, TestApp } from '../support/test-app';

/**
 * Major 2 identity (spec/v2/core/identity.md, RFC 0200) with the OIDC and OAuth2 lanes on a real
 * OpenID provider: the `auth` family record lists the lanes, RFC 9728 metadata projects them, 401 and
 * 403 carry Bearer challenges naming the metadata (and every required scope), and an ID token minted
 * for another relying party is `audience_mismatch`. Major 1 answers are unchanged.
 */
describe('v2 auth: lanes, protected resource metadata, challenges, ID token audience', () => {
  let idp: OidcProvider;
  let t: TestApp;
  const web = { id: 'openwop-console', secret: 'console-secret-0123456789abcdef', redirectUri: 'http://127.0.0.1:9/callback' };
  const other = { id: 'other-app', secret: 'other-secret-0123456789abcdef', redirectUri: 'http://127.0.0.1:9/other' };
  const v2 = { 'openwop-version': '2' };

  beforeAll(async () => {
    const codeClient = (c: typeof web) => ({ client_id: c.id, client_secret: c.secret, redirect_uris: [c.redirectUri], grant_types: ['authorization_code'], response_types: ['code'] });
    idp = await startOidcProvider({ clients: [codeClient(web), codeClient(other)], accounts: { alice: { groups: ['ops'] } } });
    t = await createTestApp({
      env: {
        OPENWOP_TEST_SEAMS: 'true',
        OPENWOP_PROTOCOL_MAJORS: '1,2',
        OPENWOP_OIDC_ISSUERS: idp.issuer,
        OPENWOP_OIDC_AUDIENCE: web.id,
        OPENWOP_OIDC_DEFAULT_TENANT: 'corp',
        OPENWOP_OIDC_GROUP_ROLES: JSON.stringify({ '*': { ops: 'editor' } }),
      },
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await idp?.stop();
  });

  it('lists the lanes in the v2 auth record and serves RFC 9728 metadata projecting them, unauthenticated', async () => {
    const root = await t.http('GET', '/.well-known/openwop', { headers: v2 });
    expect(root.body.auth.lanes).toEqual([
      expect.objectContaining({ lane: 'api-key', revocation: 'next-request', minimumAssurance: 'bearer' }),
      { lane: 'oidc', issuers: [idp.issuer], revocation: 'exp-and-recheck', minimumAssurance: 'bearer' },
    ]);
    const prm = await t.http('GET', '/.well-known/oauth-protected-resource');
    expect(prm.status).toBe(200);
    expect(prm.body).toMatchObject({ resource: expect.stringMatching(/^http:\/\//), authorization_servers: [idp.issuer], bearer_methods_supported: ['header'] });
    expect(prm.body.scopes_supported).toContain('runs:create');
  });

  it('challenges at major 2: no credential without an error code, a refused one invalid_token, a missing scope insufficient_scope with the scopes', async () => {
    const none = await t.http('GET', '/runs', { headers: v2 });
    expect(none.status).toBe(401);
    const metadata = `resource_metadata="${JSON.parse(JSON.stringify(none.headers['www-authenticate'])).match(/resource_metadata="([^"]+)"/)[1]}"`;
    expect(metadata).toMatch(/\/\.well-known\/oauth-protected-resource"$/);
    expect(none.headers['www-authenticate']).toBe(`Bearer ${metadata}`);
    const bad = await t.http('GET', '/runs', { headers: { ...v2, authorization: 'Bearer not-a-credential' } });
    expect(bad.headers['www-authenticate']).toBe(`Bearer error="invalid_token", ${metadata}`);
    const reader = await t.key({ tenant: 'corp', scopes: ['runs:read'] });
    const low = await t.http('POST', '/runs', { token: reader, headers: v2, body: { workflowId: 'conformance-noop' } });
    expect(low.status).toBe(403);
    expect(low.headers['www-authenticate']).toBe(`Bearer error="insufficient_scope", scope="runs:create", ${metadata}`);
    // Major 1 answers carry no challenge (unchanged).
    expect((await t.http('GET', '/v1/runs')).headers['www-authenticate']).toBeUndefined();
  });

  it('admits a same-audience ID token, and refuses one minted for another relying party as audience_mismatch (major 2)', async () => {
    const mine = (await idp.signIn('alice', web)).id_token;
    const created = await t.http('POST', '/runs', { headers: { ...v2, authorization: `Bearer ${mine}` }, body: { workflowId: 'conformance-noop' } });
    expect(created.status).toBe(201);
    // The run's owner is the person, as their identity provider named them, on the oidc lane.
    const read = await t.http('GET', `/runs/${encodeURIComponent(created.body.runId)}`, { headers: { ...v2, authorization: `Bearer ${mine}` } });
    expect(read.status).toBe(200);
    expect(read.body.owner.subject).toMatchObject({ issuer: idp.issuer, subjectId: 'alice', lane: 'oidc', kind: 'user' });
    const foreign = (await idp.signIn('alice', other)).id_token;
    const res = await t.http('POST', '/runs', { headers: { ...v2, authorization: `Bearer ${foreign}` }, body: { workflowId: 'conformance-noop' } });
    expect(res.status).toBe(401);
    expect(res.body.error.code ?? res.body.error).toBe('audience_mismatch');
    // Major 1 keeps the one uniform refusal.
    const v1 = await t.http('POST', '/v1/runs', { token: foreign, body: { workflowId: 'conformance-noop' } });
    expect(v1.body).toEqual({ error: 'unauthenticated', message: 'The bearer token is not valid.' });
  }, 30_000);
});
