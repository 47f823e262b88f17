import { ConfigError } from './config-error';
import { loadIdentitySettings } from './identity-settings';

describe('identity settings', () => {
  it('is all off by default', () => {
    const s = loadIdentitySettings({});
    expect(s.oidc).toBeUndefined();
    expect(s.oauth2).toBeUndefined();
    expect(s.console).toBeUndefined();
    expect(s.scimTokens.size).toBe(0);
  });

  it('reads the OIDC lane with its per-tenant group mapping, and the OAuth2 lane', () => {
    const s = loadIdentitySettings({
      OPENWOP_OIDC_ISSUERS: 'https://sso.example.com/realms/a, http://127.0.0.1:8081',
      OPENWOP_OIDC_AUDIENCE: 'openwop',
      OPENWOP_OIDC_GROUP_ROLES: '{"*":{"ops":"editor"},"acme":{"admins":["admin","viewer"]}}',
      OPENWOP_OAUTH2_ISSUER: 'https://sso.example.com/realms/a',
      OPENWOP_OAUTH2_AUDIENCE: 'urn:openwop:api',
      OPENWOP_OAUTH2_ALGORITHMS: 'ES256',
    });
    expect(s.oidc).toMatchObject({ kind: 'oidc', issuers: ['https://sso.example.com/realms/a', 'http://127.0.0.1:8081'], audience: 'openwop', algorithms: ['RS256', 'ES256'] });
    expect(s.oidc!.groupRoles['*'].ops).toEqual(['editor']);
    expect(s.oidc!.groupRoles.acme.admins).toEqual(['admin', 'viewer']);
    expect(s.oidc!.claims).toMatchObject({ principal: 'sub', groups: 'groups', tenant: 'tenant' });
    expect(s.oauth2).toMatchObject({ kind: 'oauth2', issuers: ['https://sso.example.com/realms/a'], audience: 'urn:openwop:api', algorithms: ['ES256'] });
    expect(s.oauth2!.claims.principal).toBe('client_id');
  });

  it.each([
    [{ OPENWOP_OIDC_ISSUERS: 'https://idp.example.com' }, /OPENWOP_OIDC_AUDIENCE/],
    [{ OPENWOP_OIDC_ISSUERS: 'http://idp.example.com', OPENWOP_OIDC_AUDIENCE: 'a' }, /https/],
    [{ OPENWOP_OIDC_ISSUERS: 'https://idp.example.com', OPENWOP_OIDC_AUDIENCE: 'a', OPENWOP_OIDC_ALGORITHMS: 'HS256' }, /asymmetric/],
    [{ OPENWOP_OIDC_ISSUERS: 'https://idp.example.com', OPENWOP_OIDC_AUDIENCE: 'a', OPENWOP_OIDC_ALGORITHMS: 'none' }, /unsupported/],
    [{ OPENWOP_OIDC_ISSUERS: 'https://idp.example.com', OPENWOP_OIDC_AUDIENCE: 'a', OPENWOP_OIDC_GROUP_ROLES: '[1]' }, /object/],
    [{ OPENWOP_OAUTH2_ISSUER: 'https://idp.example.com' }, /OPENWOP_OAUTH2_AUDIENCE/],
    [{ OPENWOP_SCIM_TOKENS: 'acme=short' }, /32/],
    [{ OPENWOP_SCIM_TOKENS: 'no-equals-sign' }, /<tenant>=<token>/],
    [{ OPENWOP_CONSOLE_OIDC_CLIENT_ID: 'c' }, /OIDC lane/],
    [{ OPENWOP_OIDC_ISSUERS: 'https://idp.example.com', OPENWOP_OIDC_AUDIENCE: 'a', OPENWOP_CONSOLE_OIDC_CLIENT_ID: 'c', OPENWOP_CONSOLE_OIDC_REDIRECT_URL: 'https://h/elsewhere' }, /console\/auth\/callback/],
    [{ OPENWOP_OIDC_ISSUERS: 'https://idp.example.com', OPENWOP_OIDC_AUDIENCE: 'a', OPENWOP_CONSOLE_OIDC_CLIENT_ID: 'c', OPENWOP_CONSOLE_OIDC_ISSUER: 'https://other.example.com', OPENWOP_CONSOLE_OIDC_REDIRECT_URL: 'https://h/console/auth/callback' }, /one of OPENWOP_OIDC_ISSUERS/],
  ])('refuses to start with %j', (env, message) => {
    expect(() => loadIdentitySettings(env)).toThrow(ConfigError);
    expect(() => loadIdentitySettings(env)).toThrow(message);
  });

  it('maps SCIM tokens to tenants and reads the console sign-in', () => {
    const token = 'x'.repeat(40);
    const s = loadIdentitySettings({
      OPENWOP_SCIM_TOKENS: `acme=${token}`,
      OPENWOP_OIDC_ISSUERS: 'https://idp.example.com',
      OPENWOP_OIDC_AUDIENCE: 'a',
      OPENWOP_CONSOLE_OIDC_CLIENT_ID: 'console',
      OPENWOP_CONSOLE_OIDC_REDIRECT_URL: 'https://openwop.example.com/console/auth/callback',
    });
    expect(s.scimTokens.get(token)).toBe('acme');
    expect(s.console).toEqual({ issuer: 'https://idp.example.com', clientId: 'console', redirectUrl: 'https://openwop.example.com/console/auth/callback', scopes: 'openid profile email groups', sessionTtlS: 28800 });
  });
});
