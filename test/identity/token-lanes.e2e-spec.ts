import { generateKeyPairSync } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { startOidcProvider, OidcProvider } from '../support/oidc-provider';
import { createTestApp, TestApp } from '../support/test-app';

/**
 * The OIDC user-bearer and OAuth2 client-credentials lanes against a real OpenID provider
 * (oidc-provider in a child process): ID tokens from the authorization-code + PKCE flow, access
 * tokens from client credentials, each checked for issuer, audience, signature, key id and
 * algorithm, their groups mapped to host roles per tenant (fail closed), their scopes filtered.
 */
describe('identity-provider token lanes (real OIDC provider)', () => {
  let idp: OidcProvider;
  let t: TestApp;
  const web = { id: 'openwop-console', secret: 'console-secret-0123456789abcdef', redirectUri: 'http://127.0.0.1:9/callback' };
  const other = { id: 'other-app', secret: 'other-secret-0123456789abcdef', redirectUri: 'http://127.0.0.1:9/other' };
  const API = 'https://openwop.test/api';

  beforeAll(async () => {
    const codeClient = (c: typeof web) => ({ client_id: c.id, client_secret: c.secret, redirect_uris: [c.redirectUri], grant_types: ['authorization_code'], response_types: ['code'] });
    idp = await startOidcProvider({
      clients: [
        codeClient(web),
        codeClient(other),
        { client_id: 'ci-bot', client_secret: 'ci-bot-secret-0123456789abcdef', grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope: 'runs:read runs:create' },
        { client_id: 'reader-bot', client_secret: 'reader-secret-0123456789abcdef', grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope: 'runs:read' },
      ],
      accounts: {
        alice: { groups: ['openwop:operators'], email: 'alice@corp.test' },
        bob: { groups: [], email: 'bob@corp.test' },
        carol: { groups: ['acme-readers'], tenant: 'acme' },
        dave: { groups: ['acme-readers'] },
      },
      resource: { audience: API, scope: 'runs:read runs:create' },
    });
    t = await createTestApp({
      env: {
        OPENWOP_TEST_SEAMS: 'true',
        OPENWOP_OIDC_ISSUERS: idp.issuer,
        OPENWOP_OIDC_AUDIENCE: web.id,
        OPENWOP_OIDC_DEFAULT_TENANT: 'corp',
        OPENWOP_OIDC_GROUP_ROLES: JSON.stringify({ '*': { 'openwop:operators': 'editor' }, acme: { 'acme-readers': ['viewer'] } }),
        OPENWOP_OAUTH2_ISSUER: idp.issuer,
        OPENWOP_OAUTH2_AUDIENCE: API,
        OPENWOP_OAUTH2_DEFAULT_TENANT: 'corp',
      },
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await idp?.stop();
  });

  const createRun = (token: string) => t.http('POST', '/v1/runs', { token, body: { workflowId: 'conformance-noop', inputs: {} } });
  const refusedAs401 = (res: { status: number; body: unknown }) => {
    expect(res.status).toBe(401);
    // One answer for every refused token: which check failed is not told (no oracle).
    expect(res.body).toEqual({ error: 'unauthenticated', message: 'The bearer token is not valid.' });
  };

  it('advertises both profiles with their lanes', async () => {
    const res = await t.http('GET', '/.well-known/openwop');
    const auth = res.body.capabilities?.auth ?? res.body.auth;
    expect(auth.profiles).toEqual(expect.arrayContaining(['openwop-auth-oidc-user-bearer', 'openwop-auth-oauth2-client-credentials']));
    expect(auth.oidc).toEqual({ supported: true, issuers: [idp.issuer], audience: web.id, supportedScopeMapping: 'group-claim' });
    expect(auth.oauth2).toEqual({ supported: true, issuer: idp.issuer, audience: API, supportedAlgorithms: ['RS256', 'ES256'] });
  });

  it('admits a signed-in user whose group maps to a role, in the default tenant, as their subject', async () => {
    const { id_token } = await idp.signIn('alice', web);
    expect((jwt.decode(id_token) as { groups: string[] }).groups).toEqual(['openwop:operators']);
    const run = await createRun(id_token);
    expect(run.status).toBe(201);
    const me = await t.http('GET', '/v1/whoami', { token: id_token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ tenant: 'corp', principal: 'alice' });
    const read = await t.http('GET', `/v1/runs/${run.body.runId}`, { token: id_token });
    expect(read.status).toBe(200);
  }, 30_000);

  it('refuses (403, fail closed) a valid token whose groups map to no role', async () => {
    const { id_token } = await idp.signIn('bob', web);
    const res = await createRun(id_token);
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('forbidden');
    // dave's group maps to a role in tenant acme only, and his token names no tenant (default corp).
    const dave = await idp.signIn('dave', web);
    expect((await t.http('GET', '/v1/runs', { token: dave.id_token })).status).toBe(403);
  }, 30_000);

  it('maps groups per tenant: the tenant claim picks the table (viewer in acme reads, cannot start runs)', async () => {
    const { id_token } = await idp.signIn('carol', web);
    expect((await t.http('GET', '/v1/runs', { token: id_token })).status).toBe(200);
    const res = await createRun(id_token);
    expect(res.status).toBe(403);
    expect((await t.http('GET', '/v1/whoami', { token: id_token })).body).toMatchObject({ tenant: 'acme', principal: 'carol' });
  }, 30_000);

  it('refuses an ID token for another audience, a tampered one, an unknown kid and alg none, all alike', async () => {
    refusedAs401(await createRun((await idp.signIn('alice', other)).id_token));
    const { id_token } = await idp.signIn('alice', web);
    const [h, p, s] = id_token.split('.');
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    refusedAs401(await createRun(`${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'mallory' })).toString('base64url')}.${s}`));
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const forged = jwt.sign({ ...claims, exp: Math.floor(Date.now() / 1000) + 300 }, privateKey, { algorithm: 'RS256', keyid: 'never-published' });
    refusedAs401(await createRun(forged));
    const forgedKnownKid = jwt.sign({ ...claims, exp: Math.floor(Date.now() / 1000) + 300 }, privateKey, { algorithm: 'RS256', keyid: JSON.parse(Buffer.from(h, 'base64url').toString()).kid });
    refusedAs401(await createRun(forgedKnownKid));
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${p}.`;
    refusedAs401(await createRun(none));
    const expired = jwt.sign({ ...claims, iat: Math.floor(Date.now() / 1000) - 7200, exp: Math.floor(Date.now() / 1000) - 3600 }, privateKey, { algorithm: 'RS256', keyid: 'never-published' });
    refusedAs401(await createRun(expired));
  }, 30_000);

  it('admits a client-credentials token with its granted host scopes, as the client', async () => {
    const token = await idp.clientCredentials('ci-bot', 'ci-bot-secret-0123456789abcdef', 'runs:read runs:create');
    const decoded = jwt.decode(token) as { aud: string; client_id: string };
    expect(decoded.aud).toBe(API);
    const run = await createRun(token);
    expect(run.status).toBe(201);
    expect((await t.http('GET', '/v1/whoami', { token })).body).toMatchObject({ tenant: 'corp', principal: 'ci-bot' });
  }, 30_000);

  it('refuses a client-credentials token its scopes do not cover (403), and an ID token is no access token for the API audience', async () => {
    const token = await idp.clientCredentials('reader-bot', 'reader-secret-0123456789abcdef', 'runs:read');
    expect((await t.http('GET', '/v1/runs', { token })).status).toBe(200);
    expect((await createRun(token)).status).toBe(403);
  }, 30_000);
});
