import { createServer } from 'node:net';
import { ConsoleDriver, startBrowser } from '../console/console-kit';
import type { RunningBrowser } from '../support/browser';
import { startOidcProvider, OidcProvider } from '../support/oidc-provider';
import { createTestApp, TestApp } from '../support/test-app';

/** A free loopback port (the console's redirect URI must be registered before the host listens). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/**
 * Console single sign-on in a real browser (headless Chromium) against a real OpenID provider: the
 * sign-in page offers single sign-on, the provider's login form signs the person in, the console
 * lands on the Runs page as that person, and signing out ends the session.
 */
describe('console sign-in in a browser (OIDC, real provider)', () => {
  let idp: OidcProvider;
  let t: TestApp;
  let chrome: RunningBrowser;
  let driver: ConsoleDriver;

  beforeAll(async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const redirect = `${base}/console/auth/callback`;
    idp = await startOidcProvider({
      clients: [{ client_id: 'openwop-console', client_secret: 'console-secret-0123456789abcdef', redirect_uris: [redirect], post_logout_redirect_uris: [`${base}/console/`], grant_types: ['authorization_code'], response_types: ['code'] }],
      accounts: { alice: { groups: ['openwop:operators'] } },
    });
    t = await createTestApp({
      env: {
        OPENWOP_TEST_SEAMS: 'true',
        OPENWOP_OIDC_ISSUERS: idp.issuer,
        OPENWOP_OIDC_AUDIENCE: 'openwop-console',
        OPENWOP_OIDC_DEFAULT_TENANT: 'corp',
        OPENWOP_OIDC_GROUP_ROLES: JSON.stringify({ '*': { 'openwop:operators': 'editor' } }),
        OPENWOP_CONSOLE_OIDC_CLIENT_ID: 'openwop-console',
        OPENWOP_CONSOLE_OIDC_CLIENT_SECRET: 'console-secret-0123456789abcdef',
        OPENWOP_CONSOLE_OIDC_REDIRECT_URL: redirect,
      },
    });
    await t.app.listen({ port, host: '127.0.0.1' });
    chrome = await startBrowser();
    driver = new ConsoleDriver(chrome, base);
  }, 180_000);
  afterAll(async () => {
    await driver?.close();
    await chrome?.close();
    await t?.close();
    await idp?.stop();
  });

  it('signs in at the provider, lands on the Runs page as the person, and signs out', async () => {
    const page = await driver.open();
    await page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
    // The provider's own login form (oidc-provider's development interactions).
    await page.locator('input[name="login"]').fill('alice');
    await page.locator('input[name="password"]').fill('any');
    await page.locator('button[type="submit"]').click();
    await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor({ timeout: 60_000 });
    expect(new URL(page.url()).hash).toBe('#/runs');
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    expect(await page.content()).toContain('alice');
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === 'openwop_session')!;
    expect(session.httpOnly).toBe(true);
    // The page's script cannot read the session (HttpOnly), and it is in no storage.
    expect(await page.evaluate<string>('document.cookie')).not.toContain('openwop_session');
    expect(await page.evaluate<string>('JSON.stringify(window.sessionStorage)')).not.toContain(session.value);

    const loggedOut = page.waitForResponse((r) => r.url().endsWith('/console/auth/logout'));
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('link', { name: 'Sign in with single sign-on' }).waitFor();
    expect((await loggedOut).status()).toBe(200);
    // The session is over server-side: the cookie value no longer authenticates.
    expect((await t.http('GET', '/v1/whoami', { headers: { cookie: `openwop_session=${session.value}`, 'x-openwop-session': '1' } })).status).toBe(401);
    expect((await page.context().cookies()).find((c) => c.name === 'openwop_session')).toBeUndefined();
  }, 120_000);
});
