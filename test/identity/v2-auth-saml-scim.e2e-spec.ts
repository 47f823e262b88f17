import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { samlScimIssuers } from '../../src/platform/discovery/v2-records/auth';
import { startSamlIdp, SamlIdp } from '../support/saml-idp';
import { createTestApp, TestApp } from '../support/test-app';

const SCIM_TOKEN = 'scim-corp-token-0123456789abcdefghijklmnop';

/**
 * Major 2 lists the SAML and SCIM lanes the v1 document advertises as profiles (spec/v2/core/identity.md
 * §2.2, §3): `saml` with every configured provider's entityID (revocation `not-on-or-after`), `scim`
 * with the entityID each SCIM connection is bound to (`bound-connection`), and `subjectLinkKey` beside
 * them; v2 has no `profiles` or `subjectLinking`. The v1 document is unchanged. Two real samlify
 * providers: A feeds the tenant's SCIM directory, B is a second trust root of the same tenant.
 */
describe('v2 auth: SAML and SCIM lanes', () => {
  let a: SamlIdp;
  let b: SamlIdp;
  let t: TestApp;
  let dir: string;

  beforeAll(async () => {
    [a, b] = await Promise.all([startSamlIdp(), startSamlIdp()]);
    dir = mkdtempSync(path.join(tmpdir(), 'saml-lanes-'));
    const settings = path.join(dir, 'saml.json');
    writeFileSync(
      settings,
      JSON.stringify({
        idps: [
          { id: 'corp-a', tenant: 'corp', entityId: a.entityId, ssoUrl: a.ssoUrl, certificate: a.certificate, scim: true },
          { id: 'corp-b', tenant: 'corp', entityId: b.entityId, ssoUrl: b.ssoUrl, certificate: b.certificate },
        ],
      }),
    );
    t = await createTestApp({
      env: {
        OPENWOP_PROTOCOL_MAJORS: '1,2',
        OPENWOP_SCIM_TOKENS: `corp=${SCIM_TOKEN}`,
        OPENWOP_SAML_IDPS_FILE: settings,
        OPENWOP_SAML_SP_ENTITY_ID: 'urn:openwop:test-sp',
        OPENWOP_SAML_ACS_URL: 'http://127.0.0.1/console/auth/saml/acs',
      },
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('lists saml (every provider) and scim (the provider its connection is bound to) with the link key, without any SSO issuer lane', async () => {
    const res = await t.http('GET', '/.well-known/openwop', { headers: { 'openwop-version': '2' } });
    expect(res.status).toBe(200);
    const auth = res.body.auth;
    expect(auth.lanes).toEqual([
      expect.objectContaining({ lane: 'api-key', revocation: 'next-request', minimumAssurance: 'bearer' }),
      { lane: 'saml', issuers: [a.entityId, b.entityId], revocation: 'not-on-or-after', minimumAssurance: 'bearer' },
      { lane: 'scim', issuers: [a.entityId], revocation: 'bound-connection', minimumAssurance: 'bearer' },
    ]);
    expect(auth.subjectLinkKey).toBe('opaque-idp');
    for (const gone of ['profiles', 'subjectLinking', 'supported', 'oidc', 'oauth2']) expect(auth).not.toHaveProperty(gone);
    expect(res.body).not.toHaveProperty('profiles');
  });

  it('leaves the v1 document as it was: profiles and subjectLinking, no lanes', async () => {
    const doc = (await t.http('GET', '/.well-known/openwop')).body;
    const auth = doc.auth;
    expect(auth.profiles).toEqual(expect.arrayContaining(['openwop-auth-saml', 'openwop-auth-scim']));
    expect(auth).toMatchObject({ subjectLinking: true, subjectLinkKey: 'opaque-idp' });
    expect(auth).not.toHaveProperty('lanes');
  });

  it('claims no scim lane while a SCIM connection is bound to no provider, and no link key without both lanes', () => {
    const idps = [
      { tenant: 'corp', entityId: 'urn:idp:a', scim: true },
      { tenant: 'corp', entityId: 'urn:idp:b', scim: false },
      { tenant: 'solo', entityId: 'urn:idp:a', scim: false },
    ];
    expect(samlScimIssuers({ saml: { idps }, scimTokens: new Map([['x', 'corp']]) })).toEqual({ saml: ['urn:idp:a', 'urn:idp:b'], scim: ['urn:idp:a'] });
    // `solo` provisions over SCIM but no provider of its feeds the directory: the connection is unbound.
    expect(samlScimIssuers({ saml: { idps }, scimTokens: new Map([['x', 'corp'], ['y', 'solo']]) })).toEqual({ saml: ['urn:idp:a', 'urn:idp:b'], scim: [] });
    expect(samlScimIssuers({ scimTokens: new Map([['x', 'corp']]) })).toEqual({ saml: [], scim: [] });
    expect(samlScimIssuers(undefined)).toEqual({ saml: [], scim: [] });
  });
});
