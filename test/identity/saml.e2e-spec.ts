import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startSamlIdp, SamlIdp } from '../support/saml-idp';
import { createTestApp, TestApp } from '../support/test-app';

const CORP_TOKEN = 'scim-corp-token-0123456789abcdefghijklmnop';
const ATTR_TOKEN = 'scim-attr-token-0123456789abcdefghijklmnop';
const SP = 'urn:openwop:test-sp';
const ACS = 'http://127.0.0.1/console/auth/saml/acs';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/**
 * SAML 2.0 sign-in and SCIM subject linking end to end, against two real identity providers (samlify,
 * each signing with a key made at start): the console's SP-initiated sign-in (AuthnRequest, POSTed
 * response at the ACS, a session), every defect refused (foreign key, tampering, audience, issuer,
 * recipient, validity window, replay), subjects linked to SCIM users on the persistent NameID only —
 * never an email — and only under the provider that feeds the directory; a SCIM deactivation denies
 * the next sign-in, ends the session and revokes the user's keys.
 */
describe('SAML sign-in and subject linking', () => {
  let a: SamlIdp;
  let b: SamlIdp;
  let t: TestApp;
  let dir: string;
  let admin: string;

  beforeAll(async () => {
    [a, b] = await Promise.all([startSamlIdp({ groups: ['openwop-users'] }), startSamlIdp({ groups: ['openwop-users'] })]);
    dir = mkdtempSync(path.join(tmpdir(), 'saml-settings-'));
    const settings = path.join(dir, 'saml.json');
    const roles = { 'openwop-users': 'editor' };
    writeFileSync(
      settings,
      JSON.stringify({
        idps: [
          { id: 'corp-a', tenant: 'corp', entityId: a.entityId, ssoUrl: a.ssoUrl, certificate: a.certificate, groupRoles: roles, scim: true },
          { id: 'corp-b', tenant: 'corp', entityId: b.entityId, ssoUrl: b.ssoUrl, certificate: b.certificate, groupRoles: roles },
          { id: 'solo-b', tenant: 'solo', entityId: b.entityId, ssoUrl: b.ssoUrl, certificate: b.certificate, groupRoles: roles },
          { id: 'attr-a', tenant: 'attr', entityId: a.entityId, ssoUrl: a.ssoUrl, certificate: a.certificate, groupRoles: roles, scim: true, linkAttribute: 'employeeNumber' },
        ],
      }),
    );
    t = await createTestApp({
      env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_SCIM_TOKENS: `corp=${CORP_TOKEN},attr=${ATTR_TOKEN}`, OPENWOP_SAML_IDPS_FILE: settings, OPENWOP_SAML_SP_ENTITY_ID: SP, OPENWOP_SAML_ACS_URL: ACS },
    });
    admin = await t.key({ tenant: 'corp', scopes: ['audit:read'] });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const scim = (method: string, url: string, body?: unknown, token = CORP_TOKEN) =>
    t.http(method, `/scim/v2${url}`, { headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/scim+json' } : {}) }, ...(body !== undefined ? { rawBody: JSON.stringify(body) } : {}) });
  const provisionUser = async (userName: string, externalId: string, extra: Record<string, unknown> = {}) => {
    const res = await scim('POST', '/Users', { schemas: [USER], userName, externalId, active: true, ...extra });
    expect(res.status).toBe(201);
    return res.body as { id: string };
  };
  /** The console sign-in: the host's redirect, the person at the provider, the form posted back to the ACS. */
  const signIn = async (idp: SamlIdp, provider: string, person: Parameters<SamlIdp['login']>[1]) => {
    const start = await t.http('GET', `/console/auth/saml/login?idp=${provider}`);
    expect(start.status).toBe(302);
    const location = String(start.headers.location);
    expect(location.startsWith(`${idp.ssoUrl}?SAMLRequest=`)).toBe(true);
    const form = await idp.login(location, person);
    expect(form.action).toBe(ACS);
    return { form, post: () => acs(form) };
  };
  const acs = (form: { SAMLResponse: string; RelayState: string }) =>
    t.http('POST', '/console/auth/saml/acs', { headers: { 'content-type': 'application/x-www-form-urlencoded' }, rawBody: new URLSearchParams({ SAMLResponse: form.SAMLResponse, RelayState: form.RelayState }).toString() });
  const sessionOf = (res: { headers: Record<string, string | string[] | undefined> }) => {
    const c = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((h) => h.startsWith('openwop_session='));
    return c ? c.slice('openwop_session='.length).split(';')[0] : undefined;
  };
  const validate = (idp: SamlIdp, nameId: string, variant = 'valid', token = admin) => t.http('POST', '/v1/host/sample/auth/saml/validate', { token, body: { idpUrl: idp.url, variant, nameId } });

  it('advertises both identity profiles with subject linking (configured-immutable: one provider links on a declared attribute)', async () => {
    const doc = (await t.http('GET', '/.well-known/openwop')).body;
    const auth = doc.capabilities?.auth ?? doc.auth;
    expect(auth.profiles).toEqual(expect.arrayContaining(['openwop-auth-saml', 'openwop-auth-scim']));
    expect(auth).toMatchObject({ subjectLinking: true, subjectLinkKey: 'configured-immutable' });
  });

  it('a provider configured to link on an immutable attribute links on it, and on nothing else', async () => {
    const made = await scim('POST', '/Users', { schemas: [USER], userName: 'kim', externalId: 'E-1001', active: true }, ATTR_TOKEN);
    expect(made.status).toBe(201);
    const ok = await (await signIn(a, 'attr-a', { nameId: 'idp-op-kim', employeeNumber: 'E-1001' })).post();
    expect(ok.status).toBe(302);
    const me = await t.http('GET', '/v1/whoami', { headers: { cookie: `openwop_session=${sessionOf(ok)}`, 'x-openwop-session': '1' } });
    expect(me.body).toMatchObject({ tenant: 'attr', principal: 'kim' });
    // The NameID equal to the externalId is not the link key of this provider; without the attribute nothing links.
    expect((await (await signIn(a, 'attr-a', { nameId: 'E-1001' })).post()).status).toBe(401);
  });

  it('signs a provisioned person in through the console (SP-initiated, POST binding) and refuses the same response twice', async () => {
    await provisionUser('erin', 'idp-op-erin');
    const { form, post } = await signIn(a, 'corp-a', { nameId: 'idp-op-erin' });
    const done = await post();
    expect(done.status).toBe(302);
    expect(done.headers.location).toBe('/console/#/runs');
    const session = sessionOf(done)!;
    expect(session).toBeTruthy();
    const me = await t.http('GET', '/v1/whoami', { headers: { cookie: `openwop_session=${session}`, 'x-openwop-session': '1' } });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ tenant: 'corp', principal: 'erin' });
    expect(me.body.scopes).toContain('runs:create');
    // Replayed: the AuthnRequest it answers is used up, and its assertion id was seen.
    const again = await acs(form);
    expect(again.status).toBe(401);
    expect(sessionOf(again)).toBeUndefined();
  });

  it.each([
    ['bad-signature', 'signature'],
    ['tampered', 'signature'],
    ['wrong-audience', 'audience'],
    ['wrong-issuer', 'issuer'],
    ['wrong-recipient', 'destination'],
    ['expired', 'expired'],
    ['not-yet-valid', 'expired'],
  ])('refuses a %s response at the ACS (401, no session) and says why at the seam (%s)', async (variant, reason) => {
    await provisionUser(`v-${variant}`, `idp-op-${variant}`);
    const { post } = await signIn(a, 'corp-a', { nameId: `idp-op-${variant}`, variant });
    const res = await post();
    expect(res.status).toBe(401);
    expect(sessionOf(res)).toBeUndefined();
    const seam = await validate(a, `idp-op-${variant}`, variant);
    expect(seam.status).toBe(200);
    expect(seam.body).toMatchObject({ authenticated: false, reason });
    // The control: the same person, a valid response.
    expect((await validate(a, `idp-op-${variant}`)).body).toMatchObject({ authenticated: true, principal: `v-${variant}` });
  });

  it('refuses an assertion id it accepted before, even inside a response to a fresh request', async () => {
    await provisionUser('lena', 'idp-op-lena');
    expect((await validate(a, 'idp-op-lena', 'fixed-assertion-id')).body).toMatchObject({ authenticated: true, principal: 'lena' });
    expect((await validate(a, 'idp-op-lena', 'fixed-assertion-id')).body).toMatchObject({ authenticated: false, reason: 'replayed' });
    expect((await validate(a, 'idp-op-lena')).body).toMatchObject({ authenticated: true });
  });

  it('a SCIM deactivation denies the next sign-in, ends the live session and revokes the user\'s keys', async () => {
    const user = await provisionUser('grace', 'idp-op-grace');
    const key = await t.key({ tenant: 'corp', principal: 'grace', roles: ['viewer'] });
    const session = sessionOf(await (await signIn(a, 'corp-a', { nameId: 'idp-op-grace' })).post())!;
    const headers = { cookie: `openwop_session=${session}`, 'x-openwop-session': '1' };
    expect((await t.http('GET', '/v1/whoami', { headers })).status).toBe(200);
    expect((await t.http('GET', '/v1/whoami', { token: key })).status).toBe(200);
    const off = await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: false }] });
    expect(off.status).toBe(200);
    expect((await t.http('GET', '/v1/whoami', { headers })).status).toBe(401);
    expect((await t.http('GET', '/v1/whoami', { token: key })).status).toBe(401);
    const denied = await (await signIn(a, 'corp-a', { nameId: 'idp-op-grace' })).post();
    expect(denied.status).toBe(403);
    expect(sessionOf(denied)).toBeUndefined();
    expect((await validate(a, 'idp-op-grace')).body).toMatchObject({ authenticated: false, reason: 'deprovisioned', linkedDenied: true });
  });

  it('never links across identity providers: the same NameID from the other provider is no one here', async () => {
    await provisionUser('heidi', 'idp-op-collide');
    expect((await validate(a, 'idp-op-collide')).body).toMatchObject({ authenticated: true, principal: 'heidi', linked: true });
    const cross = await validate(b, 'idp-op-collide');
    expect(cross.body).toMatchObject({ authenticated: false, reason: 'cross-idp', linkedDenied: false });
    const console = await (await signIn(b, 'corp-b', { nameId: 'idp-op-collide' })).post();
    expect(console.status).toBe(401);
  });

  it('never links on an email: an email NameID or a mail attribute matching a user signs no one in, and an email link is refused', async () => {
    await provisionUser('ivan@corp.test', 'idp-op-ivan', { emails: [{ value: 'ivan@corp.test', primary: true }] });
    expect((await validate(a, 'ivan@corp.test', 'email-name-id')).body).toMatchObject({ authenticated: false, reason: 'link-key' });
    const { post } = await signIn(a, 'corp-a', { nameId: 'idp-op-unknown', mail: 'ivan@corp.test' });
    expect((await post()).status).toBe(401);
    expect((await validate(a, 'ivan@corp.test')).body).toMatchObject({ authenticated: false, reason: 'unprovisioned' });
    const link = await t.http('POST', '/v1/host/sample/auth/scim/provision', { token: admin, body: { scimUrl: 'http://127.0.0.1/scim/v2', op: 'link', linkKey: 'email', email: 'ivan@corp.test' } });
    expect(link.status).toBe(400);
    expect(link.body).toMatchObject({ error: 'validation_error', details: { linkKey: 'email' } });
    const byMail = await t.http('POST', '/v1/host/sample/auth/scim/provision', { token: admin, body: { scimUrl: 'http://127.0.0.1/scim/v2', op: 'deactivate-user', email: 'ivan@corp.test' } });
    expect(byMail.status).toBe(400);
    expect((await validate(a, 'idp-op-ivan')).body).toMatchObject({ authenticated: true, principal: 'ivan@corp.test' });
  });

  it('the provisioning seam provisions and deactivates the caller\'s tenant under its directory\'s provider only', async () => {
    const seam = (body: Record<string, unknown>) => t.http('POST', '/v1/host/sample/auth/scim/provision', { token: admin, body: { scimUrl: 'http://127.0.0.1/scim/v2', ...body } });
    const made = await seam({ op: 'create-user', externalId: 'idp-op-judy', userName: 'erin', idpUrl: a.url });
    // erin is taken by another person: the directory keeps userNames unique.
    expect(made.status).toBe(201);
    expect(made.body.user).toMatchObject({ userName: 'erin.idp-op-judy', externalId: 'idp-op-judy', active: true, linkIdp: 'corp-a' });
    expect((await seam({ op: 'create-user', externalId: 'idp-op-judy', idpUrl: b.url })).status).toBe(400);
    expect((await seam({ op: 'create-user', externalId: 'idp-op-judy' })).status).toBe(200);
    expect((await seam({ op: 'deactivate-user', externalId: 'idp-op-judy' })).status).toBe(200);
    expect((await validate(a, 'idp-op-judy')).body).toMatchObject({ authenticated: false, linkedDenied: true });
    expect((await seam({ op: 'create-user', externalId: 'x', scimUrl: 'http://127.0.0.1/other' })).status).toBe(400);
    expect((await seam({ op: 'explode', externalId: 'x' })).status).toBe(400);
    const otherTenant = await t.key({ tenant: 'solo', scopes: ['audit:read'] });
    expect((await t.http('POST', '/v1/host/sample/auth/scim/provision', { token: otherTenant, body: { scimUrl: 'http://127.0.0.1/scim/v2', op: 'create-user', externalId: 'x' } })).status).toBe(404);
    // A provider of another tenant is unknown to this one.
    expect((await validate(a, 'idp-op-judy', 'valid', otherTenant)).status).toBe(400);
  });

  it('in a tenant without SCIM the principal is the provider-qualified subject', async () => {
    const solo = await t.key({ tenant: 'solo', scopes: ['audit:read'] });
    expect((await validate(b, 'idp-op-zoe', 'valid', solo)).body).toMatchObject({ authenticated: true, tenant: 'solo', principal: 'solo-b:idp-op-zoe', linked: false });
  });

  it('answers form bodies only at the ACS, and unknown providers with 404', async () => {
    const res = await t.http('POST', '/v1/runs', { token: admin, headers: { 'content-type': 'application/x-www-form-urlencoded' }, rawBody: 'a=b' });
    expect(res.status).toBe(415);
    expect((await t.http('GET', '/console/auth/saml/login?idp=nope')).status).toBe(404);
    const metadata = await t.http('GET', '/console/auth/saml/metadata');
    expect(metadata.status).toBe(200);
    expect(metadata.text).toContain(ACS);
  });
});
