import { startOidcProvider, OidcProvider } from '../support/oidc-provider';
import { createTestApp, TestApp } from '../support/test-app';

/**
 * Console single sign-on against a real OpenID provider: authorization code + PKCE started by the
 * host, the state bound to the browser by a cookie and usable once, the ID token verified (audience:
 * the console client, nonce), groups mapped to roles (fail closed), a server-side session named by an
 * HttpOnly cookie that authenticates API calls only with X-OpenWOP-Session, and sign-out ending it.
 */
describe('console sign-in (OIDC, real provider)', () => {
  let idp: OidcProvider;
  let t: TestApp;
  const client = { id: 'openwop-console', secret: 'console-secret-0123456789abcdef', redirectUri: 'http://127.0.0.1:9/console/auth/callback' };

  beforeAll(async () => {
    idp = await startOidcProvider({
      clients: [{ client_id: client.id, client_secret: client.secret, redirect_uris: [client.redirectUri], grant_types: ['authorization_code'], response_types: ['code'] }],
      accounts: { alice: { groups: ['openwop:operators'] }, bob: { groups: ['nobody'] } },
    });
    t = await createTestApp({
      env: {
        OPENWOP_TEST_SEAMS: 'true',
        OPENWOP_OIDC_ISSUERS: idp.issuer,
        OPENWOP_OIDC_AUDIENCE: 'openwop-api-users',
        OPENWOP_OIDC_DEFAULT_TENANT: 'corp',
        OPENWOP_OIDC_GROUP_ROLES: JSON.stringify({ '*': { 'openwop:operators': 'editor' } }),
        OPENWOP_CONSOLE_OIDC_CLIENT_ID: client.id,
        OPENWOP_CONSOLE_OIDC_CLIENT_SECRET: client.secret,
        OPENWOP_CONSOLE_OIDC_REDIRECT_URL: client.redirectUri,
      },
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await idp?.stop();
  });

  const cookie = (res: { headers: Record<string, string | string[] | undefined> }, name: string) => {
    const all = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
    const c = all.find((x) => x.startsWith(`${name}=`));
    return c ? { value: c.split(';')[0].slice(name.length + 1), attrs: c } : undefined;
  };

  /** Starts a sign-in at the host, signs `user` in at the provider: the callback URL and the login cookie. */
  const start = async (user: string) => {
    const login = await t.http('GET', '/console/auth/login');
    expect(login.status).toBe(302);
    const loc = new URL(String(login.headers.location));
    expect(`${loc.origin}${loc.pathname}`).toBe(`${idp.issuer}/auth`);
    expect(loc.searchParams.get('code_challenge_method')).toBe('S256');
    expect(loc.searchParams.get('nonce')).toBeTruthy();
    const state = cookie(login, 'openwop_login')!;
    expect(state.attrs).toMatch(/HttpOnly/);
    expect(state.value).toBe(loc.searchParams.get('state'));
    const back = await idp.authorize(loc.toString(), user);
    return { callback: `${back.pathname}${back.search}`, loginCookie: state.value };
  };

  it('signs a person in, lands on the Runs page, and the session authenticates the console\'s API calls', async () => {
    const { callback, loginCookie } = await start('alice');
    const done = await t.http('GET', callback, { headers: { cookie: `openwop_login=${loginCookie}` } });
    expect(done.status).toBe(302);
    expect(done.headers.location).toBe('/console/#/runs');
    const session = cookie(done, 'openwop_session')!;
    expect(session.attrs).toMatch(/HttpOnly/);
    expect(session.attrs).toMatch(/SameSite=Lax/);
    const headers = { cookie: `openwop_session=${session.value}`, 'x-openwop-session': '1' };
    const me = await t.http('GET', '/v1/whoami', { headers });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ tenant: 'corp', principal: 'alice' });
    expect(me.body.scopes).toContain('runs:create');
    expect((await t.http('POST', '/v1/runs', { headers, body: { workflowId: 'conformance-noop', inputs: {} } })).status).toBe(201);
    // Without the header a cross-site page cannot send, the cookie alone authenticates nothing (CSRF).
    expect((await t.http('POST', '/v1/runs', { headers: { cookie: headers.cookie }, body: { workflowId: 'conformance-noop', inputs: {} } })).status).toBe(401);
    // The code and state are single-use.
    expect((await t.http('GET', callback, { headers: { cookie: `openwop_login=${loginCookie}` } })).status).toBe(401);

    const out = await t.http('POST', '/console/auth/logout', { headers: { cookie: headers.cookie } });
    expect(out.status).toBe(200);
    expect(cookie(out, 'openwop_session')!.attrs).toMatch(/Max-Age=0/);
    expect(out.body.endSessionUrl).toContain(`${idp.issuer}/session/end`);
    expect((await t.http('GET', '/v1/whoami', { headers })).status).toBe(401);
  }, 60_000);

  it('refuses a callback whose state is not the browser\'s own (login CSRF), or that carries an error', async () => {
    const { callback } = await start('alice');
    const other = await start('alice');
    const res = await t.http('GET', callback, { headers: { cookie: `openwop_login=${other.loginCookie}` } });
    expect(res.status).toBe(401);
    expect(cookie(res, 'openwop_session')).toBeUndefined();
    expect((await t.http('GET', callback)).status).toBe(401);
    expect((await t.http('GET', '/console/auth/callback?error=access_denied&state=x')).status).toBe(401);
  }, 60_000);

  it('refuses (403, no session) a person whose groups map to no role', async () => {
    const { callback, loginCookie } = await start('bob');
    const res = await t.http('GET', callback, { headers: { cookie: `openwop_login=${loginCookie}` } });
    expect(res.status).toBe(403);
    expect(cookie(res, 'openwop_session')).toBeUndefined();
  }, 60_000);
});
