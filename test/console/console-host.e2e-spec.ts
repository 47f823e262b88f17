import { createTestApp, TestApp } from '../support/test-app';
import { buildConsole } from '../support/browser';

describe('the host serves the operator console', () => {
  let t: TestApp;
  beforeAll(async () => {
    buildConsole();
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it('serves the built page at /console/ with a same-origin-only Content-Security-Policy', async () => {
    for (const url of ['/', '/console']) {
      const redirect = await t.http('GET', url);
      expect(redirect.status).toBe(302);
      expect(redirect.headers.location).toBe('/console/');
    }
    const page = await t.http('GET', '/console/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.text).toContain('<div id="app">');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).toContain("connect-src 'self'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.headers['cache-control']).toBe('no-cache');
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(page.text)?.[1];
    expect(script).toBeDefined();
    const asset = await t.http('GET', script!);
    expect(asset.status).toBe(200);
    expect(asset.headers['cache-control']).toContain('immutable');
  });

  it('answers an unknown console file with the canonical 404 and never lists or leaks files', async () => {
    for (const url of ['/console/nope.js', '/console/.build-stamp', '/console/../package.json', '/console/assets/']) {
      const res = await t.http('GET', url);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found', message: expect.any(String) });
    }
  });

  it('tells the sign-in form whether bearer JWTs are accepted, and nothing else', async () => {
    expect((await t.http('GET', '/console/settings.json')).body).toEqual({ jwt: false });
    const jwt = await createTestApp({ env: { OPENWOP_JWT_SECRET: 'x'.repeat(40) } });
    try {
      expect((await jwt.http('GET', '/console/settings.json')).body).toEqual({ jwt: true });
    } finally {
      await jwt.close();
    }
  });

  it('is not part of the protocol surface: absent from discovery and from the OpenAPI document', async () => {
    const discovery = await t.http('GET', '/.well-known/openwop');
    expect(discovery.text).not.toMatch(/console/i);
    const doc = await t.http('GET', '/v1/openapi.json');
    expect(Object.keys(doc.body.paths).filter((p) => p.startsWith('/console'))).toEqual([]);
  });

  it('is not served when OPENWOP_CONSOLE=false', async () => {
    const off = await createTestApp({ env: { OPENWOP_CONSOLE: 'false' } });
    try {
      expect((await off.http('GET', '/console/')).status).toBe(404);
      // Without the console, the host's root is what it always was: the canonical 404.
      const root = await off.http('GET', '/');
      expect(root.status).toBe(404);
      expect(root.body).toEqual({ error: 'not_found', message: expect.any(String) });
      expect((await off.http('GET', '/console/settings.json')).status).toBe(404);
    } finally {
      await off.close();
    }
  });

  it('GET /v1/whoami tells a credential its own tenant, workspace, principal and expanded scopes', async () => {
    const viewer = await t.key({ tenant: 'acme', workspace: 'ops', principal: 'vera', roles: ['viewer'] });
    const { data, response } = await t.api(viewer).GET('/v1/whoami');
    expect(response.status).toBe(200);
    expect(data).toEqual({
      tenant: 'acme',
      workspace: 'ops',
      principal: 'vera',
      kind: 'api-key',
      scopes: ['artifacts:read', 'connections:read', 'goals:read', 'manifest:read', 'proposals:read', 'runs:read', 'tools:read', 'webhooks:read', 'workspace:read'],
    });
    const narrow = await t.key({ tenant: 'acme', principal: 'nobody', scopes: ['tools:read', 'tools:fs:read'] });
    expect((await t.api(narrow).GET('/v1/whoami')).data).toEqual({ tenant: 'acme', principal: 'nobody', kind: 'api-key', scopes: ['tools:fs:read', 'tools:read'] });
  });

  it('GET /v1/whoami refuses a missing or bad credential with 401 unauthenticated', async () => {
    const attempts: Array<Record<string, string>> = [{}, { authorization: 'Bearer owk_nope_nope' }, { authorization: 'Basic abc' }];
    for (const headers of attempts) {
      const res = await t.http('GET', '/v1/whoami', { headers });
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('unauthenticated');
    }
  });
});
