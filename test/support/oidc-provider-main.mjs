// A real OpenID Connect / OAuth 2 provider (oidc-provider, panva) for the identity tests, run in a
// process of its own (the package is ESM-only; Jest never imports it). Configured by one JSON
// argument:
//   { clients: [oidc-provider client metadata...], accounts: { <id>: { <claims> } },
//     resource: { audience, scope }, port?: number }
// Prints one line `{"issuer": "http://127.0.0.1:<port>"}` once listening; stops on SIGTERM.
// `resource` makes client-credentials (and resource-bound) access tokens JWTs for that audience.
// Consent is implied (loadExistingGrant), so the authorization-code flow needs only the login form
// of the provider's development interactions (any password).
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const cfg = JSON.parse(process.argv[2] ?? '{}');
const server = createServer();
await new Promise((resolve) => server.listen(cfg.port ?? 0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const signing = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
const accounts = cfg.accounts ?? {};
const resource = cfg.resource;

const provider = new Provider(issuer, {
  clients: cfg.clients ?? [],
  jwks: { keys: [{ ...signing, kid: 'test-key-1', alg: 'RS256', use: 'sig' }] },
  claims: { openid: ['sub'], groups: ['groups'], email: ['email'], tenant: ['tenant'], profile: ['name'] },
  scopes: ['openid', 'offline_access', 'groups', 'email', 'profile', 'tenant', ...(resource ? resource.scope.split(' ') : [])],
  conformIdTokenClaims: false,
  findAccount: (_ctx, id) => (accounts[id] ? { accountId: id, claims: () => ({ sub: id, ...accounts[id] }) } : undefined),
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    resourceIndicators: {
      enabled: !!resource,
      defaultResource: (_ctx, _client, oneOf) => oneOf ?? resource?.audience,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, indicator) => {
        if (!resource || indicator !== resource.audience) throw new Provider.errors.InvalidTarget();
        return { scope: resource.scope, audience: resource.audience, accessTokenFormat: 'jwt', accessTokenTTL: 600, jwt: { sign: { alg: 'RS256' } } };
      },
    },
  },
  extraTokenClaims: (_ctx, token) => (token.clientId && cfg.tokenClaims?.[token.clientId]) || undefined,
  loadExistingGrant: async (ctx) => {
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile groups tenant offline_access');
    grant.addOIDCClaims(['groups', 'email', 'tenant', 'name']);
    await grant.save();
    return grant;
  },
  pkce: { required: () => true },
  ttl: { IdToken: 600, AccessToken: 600, ClientCredentials: 600, Session: 3600, Interaction: 600, Grant: 3600 },
  cookies: { keys: ['openwop-identity-tests'] },
  renderError: (ctx, out) => {
    ctx.type = 'json';
    ctx.body = out;
  },
});
provider.proxy = false;
server.on('request', provider.callback());
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
