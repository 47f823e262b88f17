import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';
import { OAuthProvider, startOAuthProvider } from '../support/oauth-provider';
import { CredentialStoreService } from '../../src/capabilities/connections/credentials/credential-store.service';
import { OAuthService } from '../../src/capabilities/connections/oauth/oauth.service';
import type { TokenSet } from '../../src/capabilities/connections/oauth/oauth-provider-client';

/**
 * OAuth connections (RFC 0047) end to end against a real authorization server (oidc-provider in a child process):
 * consent driven over HTTP, the callback, refresh before expiry and after a 401, a terminal refresh failure,
 * revocation, two principals' grants kept apart, tampered state and issuer refused, nothing secret echoed.
 */
const CLIENT = { id: 'openwop-host', secret: `client-secret-${randomBytes(12).toString('hex')}` };
const CALLBACK = 'https://host.example.test/v1/oauth/callback';
const PACK = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../fixtures/connection-packs/connection-pack-acme-widgets.json'), 'utf8'));
PACK.engines = { openwop: '>=1.0.0 <2.0.0' };

describe('OAuth connections (RFC 0047) against a real provider', () => {
  let t: TestApp;
  let idp: OAuthProvider;
  let alice: string;
  let bob: string;
  let connectionId: string;
  const bodies: string[] = [];
  const secrets: string[] = [];
  /** `state` values: handed to the authorizing caller in the authorization URL, nowhere else. */
  const states: string[] = [];

  const http = async (method: string, url: string, opts: { token?: string; body?: unknown } = {}) => {
    const r = await t.http(method, url, opts);
    bodies.push(r.text);
    return r;
  };
  const store = () => t.app.get(CredentialStoreService);
  const oauth = () => t.app.get(OAuthService);
  const tokensOf = async (principal: string): Promise<{ credentialId: string; tokens: TokenSet }> => {
    const [row] = (await t.ds.query(`SELECT "credential_id" FROM "oauth_grant" WHERE "tenant" = 'acme' AND "principal" = $1`, [principal])) as Array<{ credential_id: string }>;
    const tokens = JSON.parse(await store().open('acme', row.credential_id)) as TokenSet;
    secrets.push(tokens.access_token, tokens.refresh_token ?? 'none');
    return { credentialId: row.credential_id, tokens };
  };
  /** What a connector call does: the invoking principal's token on the provider's API. */
  const whoami = (principal: string, calls?: string[]) =>
    oauth().withAccessToken({ tenant: 'acme', principal }, connectionId, async (token) => {
      calls?.push(token);
      return fetch(`${idp.issuer}/api/whoami`, { headers: { authorization: `Bearer ${token}` } });
    });
  const authorizeAndConsent = async (token: string, user: string, body: Record<string, unknown> = {}) => {
    const start = await http('POST', `/v1/connections/${connectionId}/oauth/authorize`, { token, body });
    expect(start.status).toBe(201);
    const back = await idp.consent(start.body.authorizationUrl, user);
    secrets.push(back.searchParams.get('code')!);
    states.push(back.searchParams.get('state')!);
    return { start, back };
  };
  const callback = (back: URL) => http('GET', `/v1/oauth/callback${back.search}`);

  beforeAll(async () => {
    idp = await startOAuthProvider({
      clients: [{ client_id: CLIENT.id, client_secret: CLIENT.secret, redirect_uris: [CALLBACK], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic' }],
      scopes: ['widget:read', 'widget:write'],
      accounts: ['alice', 'bob'],
    });
    process.env.OPENWOP_TEST_OAUTH_CLIENT_SECRET = CLIENT.secret;
    t = await createTestApp({
      env: { OPENWOP_CREDENTIAL_KEYS: `k1:${randomBytes(32).toString('base64')}`, OPENWOP_TEST_SEAMS: 'true' },
      configFile: {
        connections: {
          oauth: {
            callbackUrl: CALLBACK,
            allowInsecureLoopback: true,
            clients: { 'acme-widgets': { clientId: CLIENT.id, clientSecretEnv: 'OPENWOP_TEST_OAUTH_CLIENT_SECRET', issuer: idp.issuer }, synthetic: { clientId: 'openwop-conformance' } },
          },
        },
      },
    });
    const scopes = ['connections:read', 'connections:manage', 'tools:read'];
    alice = await t.key({ tenant: 'acme', principal: 'alice', scopes });
    bob = await t.key({ tenant: 'acme', principal: 'bob', scopes: ['connections:read'] });
    expect((await http('POST', '/v1/connection-packs', { token: alice, body: PACK })).status).toBe(201);
    const conn = await http('POST', '/v1/connections', { token: alice, body: { provider: 'acme-widgets', name: 'widgets' } });
    expect(conn.status).toBe(201);
    expect(conn.body).toMatchObject({ provider: 'acme-widgets', credentialBound: false });
    connectionId = conn.body.id;
  });

  afterAll(async () => {
    await t?.close();
    await idp?.stop();
    delete process.env.OPENWOP_TEST_OAUTH_CLIENT_SECRET;
  });

  it('advertises the oauth capability with its grants and providers', async () => {
    const d = await http('GET', '/.well-known/openwop');
    expect(d.body.capabilities.oauth).toEqual({ supported: true, grants: ['authorization_code', 'refresh_token'], providers: [{ id: 'acme-widgets' }, { id: 'synthetic' }] });
  });

  it('refuses a provider without an OAuth client and a scope the pack does not declare', async () => {
    const github = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../fixtures/connection-packs/connection-pack-github.json'), 'utf8'));
    expect((await http('POST', '/v1/connection-packs', { token: alice, body: github })).status).toBe(201);
    const noClient = await http('POST', '/v1/connections', { token: alice, body: { provider: 'github', name: 'gh' } });
    expect(noClient.status).toBe(422);
    expect(noClient.body.error).toBe('oauth_provider_unsupported');
    const scope = await http('POST', `/v1/connections/${connectionId}/oauth/authorize`, { token: alice, body: { scopes: ['admin:everything'] } });
    expect(scope.status).toBe(422);
    expect(scope.body.error).toBe('oauth_scope_unsupported');
    const group = await http('POST', `/v1/connections/${connectionId}/oauth/authorize`, { token: alice, body: { groups: ['nope'] } });
    expect(group.body.error).toBe('oauth_scope_unsupported');
  });

  it('runs the authorization-code grant with PKCE through the consent screen and seals the tokens', async () => {
    const { start, back } = await authorizeAndConsent(alice, 'alice');
    const url = new URL(start.body.authorizationUrl);
    expect(url.origin).toBe(idp.issuer);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.get('scope')).toBe('widget:read');
    expect(`${back.origin}${back.pathname}`).toBe(CALLBACK);
    expect(back.searchParams.get('iss')).toBe(idp.issuer);
    const connectorTools = async () => ((await http('GET', '/v1/tools?source=connector', { token: alice })).body as Array<{ toolId: string }>).map((d: { toolId: string }) => d.toolId);
    expect(await connectorTools()).toEqual([]);
    const done = await callback(back);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ connectionId, provider: 'acme-widgets', principal: 'alice', status: 'active', scopes: ['widget:read'] });
    // A connection with an active grant is usable: its actions join the tool catalog.
    expect(await connectorTools()).toEqual(['connector:acme-widgets.widget.read', 'connector:acme-widgets.widget.write']);
    expect(done.body.credentialRef).toMatch(/^cred:[0-9a-f-]{36}$/);
    const { tokens } = await tokensOf('alice');
    expect(tokens.refresh_token).toBeTruthy();
    const res = await whoami('alice');
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ sub: 'alice', scope: 'widget:read' });
    const events = (await t.ds.query(`SELECT "payload" FROM "event" WHERE "stream_key" IN (SELECT "key" FROM "event_stream" WHERE "tenant" = 'acme') AND "type" = 'connector.authorized'`)) as Array<{ payload: Record<string, unknown> }>;
    expect(events.map((e) => e.payload)).toEqual([{ provider: 'acme-widgets', credentialRef: done.body.credentialRef, scopes: ['widget:read'] }]);
  });

  it("keeps two principals' grants apart: each call uses the invoking principal's own token", async () => {
    const { back } = await authorizeAndConsent(bob, 'bob', { groups: ['widget.read', 'widget.write'] });
    const done = await callback(back);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ principal: 'bob', scopes: ['widget:read', 'widget:write'] });
    expect(await (await whoami('bob')).json()).toMatchObject({ sub: 'bob', scope: 'widget:read widget:write' });
    expect(await (await whoami('alice')).json()).toMatchObject({ sub: 'alice', scope: 'widget:read' });
    expect((await tokensOf('alice')).tokens.access_token).not.toBe((await tokensOf('bob')).tokens.access_token);
    await expect(whoami('carol')).rejects.toMatchObject({ code: 'oauth_grant_missing' });
    const aliceSees = await http('GET', `/v1/connections/${connectionId}/oauth`, { token: alice });
    expect(aliceSees.body.grants.map((g: { principal: string }) => g.principal)).toEqual(['alice']);
  });

  it('refuses a tampered state, a replayed callback and a foreign issuer', async () => {
    const { back } = await authorizeAndConsent(alice, 'alice');
    const tampered = new URL(back);
    tampered.searchParams.set('state', `${back.searchParams.get('state')}x`);
    const bad = await callback(tampered);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('oauth_state_invalid');
    const forged = new URL(back);
    forged.searchParams.set('iss', 'https://evil.example.test');
    const iss = await callback(forged);
    expect(iss.status).toBe(400);
    expect(iss.body.error).toBe('oauth_issuer_mismatch');
    // The state was consumed by the refused attempt: the genuine redirect cannot be replayed afterwards either.
    const replay = await callback(back);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('oauth_state_invalid');
  });

  it('refreshes a token about to expire before using it (refresh tokens rotate)', async () => {
    const before = await tokensOf('alice');
    await store().replace('acme', before.credentialId, JSON.stringify({ ...before.tokens, expires_at: Date.now() + 1000 }), t.ds.manager);
    const calls: string[] = [];
    const res = await whoami('alice', calls);
    expect(res.status).toBe(200);
    const after = await tokensOf('alice');
    expect(calls).toEqual([after.tokens.access_token]);
    expect(after.tokens.access_token).not.toBe(before.tokens.access_token);
    expect(after.tokens.refresh_token).not.toBe(before.tokens.refresh_token);
    expect(after.tokens.expires_at! - Date.now()).toBeGreaterThan(3_000_000);
  });

  it('concurrent calls on a token about to expire refresh it once (a reused rotated refresh token would revoke the grant)', async () => {
    const before = await tokensOf('alice');
    await store().replace('acme', before.credentialId, JSON.stringify({ ...before.tokens, expires_at: Date.now() + 1000 }), t.ds.manager);
    const calls: string[] = [];
    const answers = await Promise.all([whoami('alice', calls), whoami('alice', calls), whoami('alice', calls), whoami('alice', calls)]);
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const after = await tokensOf('alice');
    expect(new Set(calls)).toEqual(new Set([after.tokens.access_token]));
    expect((await http('GET', `/v1/connections/${connectionId}/oauth`, { token: alice })).body.grants[0].status).toBe('active');
  });

  it('refreshes after a 401 from the provider and retries once', async () => {
    const before = await tokensOf('alice');
    await idp.expireAccessToken(before.tokens.access_token);
    const calls: string[] = [];
    const res = await whoami('alice', calls);
    expect(res.status).toBe(200);
    const after = await tokensOf('alice');
    expect(calls).toEqual([before.tokens.access_token, after.tokens.access_token]);
  });

  it('revokes a grant at the provider and forgets it; the other principal keeps theirs', async () => {
    const { tokens } = await tokensOf('bob');
    const r = await http('DELETE', `/v1/connections/${connectionId}/oauth`, { token: bob });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ revokedAtProvider: true });
    const direct = await fetch(`${idp.issuer}/api/whoami`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(direct.status).toBe(401);
    expect((await http('GET', `/v1/connections/${connectionId}/oauth`, { token: bob })).body.grants).toEqual([]);
    await expect(whoami('bob')).rejects.toMatchObject({ code: 'oauth_grant_missing' });
    expect((await whoami('alice')).status).toBe(200);
  });

  it('a refresh the provider refuses for good expires the grant: connector.auth_expired, connector_auth_expired', async () => {
    const before = await tokensOf('alice');
    await idp.revoke(before.tokens.refresh_token!, CLIENT);
    await store().replace('acme', before.credentialId, JSON.stringify({ ...before.tokens, expires_at: Date.now() }), t.ds.manager);
    await expect(whoami('alice')).rejects.toMatchObject({ code: 'connector_auth_expired' });
    await expect(whoami('alice')).rejects.toMatchObject({ code: 'connector_auth_expired' });
    const grants = await http('GET', `/v1/connections/${connectionId}/oauth`, { token: alice });
    expect(grants.body.grants).toMatchObject([{ principal: 'alice', status: 'expired' }]);
    const events = (await t.ds.query(`SELECT "payload" FROM "event" WHERE "stream_key" IN (SELECT "key" FROM "event_stream" WHERE "tenant" = 'acme') AND "type" = 'connector.auth_expired'`)) as Array<{ payload: Record<string, unknown> }>;
    expect(events.map((e) => e.payload)).toEqual([{ provider: 'acme-widgets', credentialRef: grants.body.grants[0].credentialRef, reason: 'invalid_grant' }]);
    // Authorizing again makes the grant usable again.
    const { back } = await authorizeAndConsent(alice, 'alice');
    expect((await callback(back)).body.status).toBe('active');
    expect((await whoami('alice')).status).toBe(200);
  });

  it('never echoes a token, code, state or verifier: not in responses, events, logs or stored rows', async () => {
    const stored = JSON.stringify(await t.ds.query(`SELECT * FROM "event"`)) + JSON.stringify(await t.ds.query(`SELECT * FROM "oauth_grant"`)) + JSON.stringify(await t.ds.query(`SELECT * FROM "oauth_authorization"`));
    const surfaces = [...bodies, ...t.logs, stored].join('\n');
    expect(secrets.length).toBeGreaterThan(10);
    for (const s of secrets.filter((x) => x !== 'none')) expect(surfaces).not.toContain(s);
    const notAuthorizeAnswers = [...bodies.filter((b) => !b.includes('"authorizationUrl"')), ...t.logs, stored].join('\n');
    expect(states.length).toBeGreaterThan(3);
    for (const s of states) expect(notAuthorizeAnswers).not.toContain(s);
    expect(surfaces).not.toContain(CLIENT.secret);
  });

  it('the conformance roundtrip seam runs the host path against the synthetic token endpoint and echoes no secret', async () => {
    const fixture = {
      provider: 'synthetic',
      authUrl: 'https://oauth.synthetic.openwop.test/authorize',
      tokenUrl: 'https://oauth.synthetic.openwop.test/token',
      scopes: ['openwop.read', 'openwop.write'],
      authorizationCode: `code-${randomBytes(8).toString('hex')}`,
      state: `state-${randomBytes(8).toString('hex')}`,
      redirectUri: 'https://host.example/openwop/oauth/callback',
      codeVerifier: randomBytes(40).toString('base64url'),
      accessTokenCanary: `AT_CANARY_${randomBytes(8).toString('hex')}`,
      refreshTokenCanary: `RT_CANARY_${randomBytes(8).toString('hex')}`,
    };
    const before = ((await t.ds.query(`SELECT count(*)::int AS n FROM "credential"`)) as Array<{ n: number }>)[0].n;
    const r = await http('POST', '/v1/host/sample/oauth/authorize-code-roundtrip', { token: alice, body: fixture });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ provider: 'synthetic', credentialRef: expect.stringMatching(/^cred:/), scopes: fixture.scopes, events: [{ type: 'connector.authorized', payload: { provider: 'synthetic', credentialRef: r.body.credentialRef, scopes: fixture.scopes } }] });
    for (const v of [fixture.authorizationCode, fixture.state, fixture.codeVerifier, fixture.accessTokenCanary, fixture.refreshTokenCanary]) expect(r.text).not.toContain(v);
    // The grant it made (and the sealed verifier) are gone afterwards.
    expect(((await t.ds.query(`SELECT count(*)::int AS n FROM "credential"`)) as Array<{ n: number }>)[0].n).toBe(before);
    const noClient = await http('POST', '/v1/host/sample/oauth/authorize-code-roundtrip', { token: alice, body: { ...fixture, provider: 'elsewhere' } });
    expect(noClient.status).toBe(422);
    expect(noClient.body.error).toBe('oauth_provider_unsupported');
  });

  it('a shared grant serves principals without their own; only connections:manage may make or revoke one', async () => {
    const carol = await t.key({ tenant: 'acme', principal: 'carol', scopes: ['connections:read'] });
    const refused = await http('POST', `/v1/connections/${connectionId}/oauth/authorize`, { token: carol, body: { shared: true } });
    expect(refused.status).toBe(403);
    await expect(whoami('carol')).rejects.toMatchObject({ code: 'oauth_grant_missing' });
    const { back } = await authorizeAndConsent(alice, 'bob', { shared: true });
    const done = await callback(back);
    expect(done.body).toMatchObject({ principal: null, status: 'active' });
    // carol has no grant of her own: the tenant's shared one answers; alice keeps using her own.
    expect(await (await whoami('carol')).json()).toMatchObject({ sub: 'bob' });
    expect(await (await whoami('alice')).json()).toMatchObject({ sub: 'alice' });
    const carolSees = await http('GET', `/v1/connections/${connectionId}/oauth`, { token: carol });
    expect(carolSees.body.grants.map((g: { principal: string | null }) => g.principal)).toEqual([null]);
    expect((await http('DELETE', `/v1/connections/${connectionId}/oauth?shared=true`, { token: carol })).status).toBe(403);
    expect((await http('DELETE', `/v1/connections/${connectionId}/oauth`, { token: carol })).status).toBe(404);
    expect((await http('DELETE', `/v1/connections/${connectionId}/oauth?shared=true`, { token: alice })).body).toEqual({ revokedAtProvider: true });
    await expect(whoami('carol')).rejects.toMatchObject({ code: 'oauth_grant_missing' });
  });

  it('sweeps authorizations nobody came back from, with their sealed verifiers', async () => {
    const start = await http('POST', `/v1/connections/${connectionId}/oauth/authorize`, { token: alice, body: {} });
    expect(start.status).toBe(201);
    const [row] = (await t.ds.query(`SELECT "id", "verifier_credential_id" FROM "oauth_authorization"`)) as Array<{ id: string; verifier_credential_id: string }>;
    expect(await oauth().sweepExpired()).toBe(0);
    await t.ds.query(`UPDATE "oauth_authorization" SET "expires_at" = now() - interval '1 second' WHERE "id" = $1`, [row.id]);
    expect(await oauth().sweepExpired()).toBe(1);
    expect(await t.ds.query(`SELECT 1 FROM "oauth_authorization"`)).toEqual([]);
    expect(await t.ds.query(`SELECT 1 FROM "credential" WHERE "id" = $1`, [row.verifier_credential_id])).toEqual([]);
    const late = await callback(new URL(`${CALLBACK}?code=x&state=${new URL(start.body.authorizationUrl).searchParams.get('state')}`));
    expect(late.body.error).toBe('oauth_state_invalid');
  });

  it('deleting the connection deletes its grants and their sealed tokens', async () => {
    const credentials = ((await t.ds.query(`SELECT "credential_id" FROM "oauth_grant"`)) as Array<{ credential_id: string }>).map((r) => r.credential_id);
    expect(credentials.length).toBe(1);
    expect((await http('DELETE', `/v1/connections/${connectionId}`, { token: alice })).status).toBe(204);
    expect(await t.ds.query(`SELECT 1 FROM "oauth_grant"`)).toEqual([]);
    expect(await t.ds.query(`SELECT 1 FROM "credential" WHERE "id" = ANY($1)`, [credentials])).toEqual([]);
  });
});
