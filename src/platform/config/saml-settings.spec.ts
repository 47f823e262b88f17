import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError } from './config-error';
import { loadSamlSettings, subjectLinkKeyClass } from './saml-settings';

const CERT = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n';

describe('SAML settings', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(path.join(tmpdir(), 'saml-settings-spec-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const load = (idps: unknown[], env: Record<string, string> = {}) => {
    const file = path.join(dir, `idps-${Math.random().toString(16).slice(2)}.json`);
    writeFileSync(file, JSON.stringify({ idps }));
    return loadSamlSettings({ OPENWOP_SAML_IDPS_FILE: file, OPENWOP_SAML_SP_ENTITY_ID: 'urn:openwop:sp', OPENWOP_SAML_ACS_URL: 'https://wop.example.com/console/auth/saml/acs', ...env });
  };
  const idp = (extra: Record<string, unknown> = {}) => ({ id: 'acme-entra', tenant: 'acme', entityId: 'https://sts.example.com/x/', ssoUrl: 'https://login.example.com/saml2', certificate: CERT, ...extra });

  it('is off without a file', () => {
    expect(loadSamlSettings({})).toBeUndefined();
  });

  it('reads the providers: NameID linking by default (opaque-idp), an immutable attribute makes the class configured-immutable', () => {
    const s = load([idp({ groupRoles: { ops: 'editor' }, scim: true })])!;
    expect(s).toMatchObject({ spEntityId: 'urn:openwop:sp', acsUrl: 'https://wop.example.com/console/auth/saml/acs', sessionTtlS: 28800 });
    expect(s.idps[0]).toMatchObject({ id: 'acme-entra', tenant: 'acme', groupsAttribute: 'groups', scim: true, certificates: [CERT] });
    expect(s.idps[0].groupRoles.ops).toEqual(['editor']);
    expect(subjectLinkKeyClass(s)).toBe('opaque-idp');
    expect(subjectLinkKeyClass(load([idp({ linkAttribute: 'employeeNumber' })])!)).toBe('configured-immutable');
  });

  it.each([
    ['an email link attribute', [idp({ linkAttribute: 'mail' })], /mutable or personal/],
    ['a claim-URI email link attribute', [idp({ linkAttribute: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress' })], /mutable or personal/],
    ['a userName link attribute', [idp({ linkAttribute: 'userName' })], /mutable or personal/],
    ['no certificate', [idp({ certificate: undefined })], /certificate/],
    ['a plain-http SSO URL off loopback', [idp({ ssoUrl: 'http://login.example.com/saml2' })], /https/],
    ['an unknown role', [idp({ groupRoles: { ops: 'root' } })], /viewer, editor, admin/],
    ['two providers with one id', [idp(), idp({ tenant: 'other' })], /two providers/],
    ['two SCIM providers for one tenant', [idp({ scim: true }), idp({ id: 'second', scim: true })], /one identity provider feeds/],
  ])('refuses %s', (_what, idps, message) => {
    expect(() => load(idps)).toThrow(ConfigError);
    expect(() => load(idps)).toThrow(message);
  });

  it('needs the SP entity id and an ACS URL on the console route', () => {
    expect(() => load([idp()], { OPENWOP_SAML_SP_ENTITY_ID: '' })).toThrow(/OPENWOP_SAML_SP_ENTITY_ID/);
    expect(() => load([idp()], { OPENWOP_SAML_ACS_URL: 'https://wop.example.com/acs' })).toThrow(/console\/auth\/saml\/acs/);
    expect(() => load([])).toThrow(/at least one provider/);
  });
});
