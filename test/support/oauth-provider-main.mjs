// A real OAuth 2.1 / OpenID Connect authorization server (oidc-provider, panva) for the OAuth-connection tests
// (RFC 0047), run in a process of its own (the package is ESM-only; Jest never imports it). Distinct from the
// identity tests' oidc-provider-main.mjs. Configured by one JSON argument:
//   { clients: [oidc-provider client metadata...], scopes: [...], accounts: [ids] }
// Prints one line `{"issuer": "http://127.0.0.1:<port>"}` once listening; stops on SIGTERM.
// The consent step is the provider's own (development interactions: a login form, then a consent form), so a test
// drives both with HTTP requests. Refresh tokens rotate on use. Beside the provider, the same server is a small
// resource server: GET /api/whoami answers {sub, scope} for a valid access token and 401 otherwise; POST /api/expire
// invalidates the presented access token alone.
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const cfg = JSON.parse(process.argv[2] ?? '{}');
const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;
const accounts = new Set(cfg.accounts ?? []);

const provider = new Provider(issuer, {
  clients: cfg.clients ?? [],
  scopes: ['openid', 'offline_access', ...(cfg.scopes ?? [])],
  findAccount: (_ctx, id) => (accounts.has(id) ? { accountId: id, claims: () => ({ sub: id }) } : undefined),
  features: { devInteractions: { enabled: true }, revocation: { enabled: true }, introspection: { enabled: true } },
  // Every authorization-code grant of a client allowed the refresh_token grant gets a refresh token (no
  // offline_access + prompt=consent dance needed for a connection).
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: true,
  pkce: { required: () => true },
  ttl: { AccessToken: 3600, AuthorizationCode: 60, RefreshToken: 86400, Session: 3600, Interaction: 600, Grant: 86400 },
  cookies: { keys: ['openwop-oauth-connection-tests'] },
  renderError: (ctx, out) => {
    ctx.type = 'json';
    ctx.body = out;
  },
});
provider.proxy = false;
const handle = provider.callback();

server.on('request', async (req, res) => {
  if (!req.url.startsWith('/api/')) return handle(req, res);
  const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  const at = token ? await provider.AccessToken.find(token) : undefined;
  if (!at) {
    res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' }).end();
    return;
  }
  // POST /api/expire: the provider drops this one access token early (its grant and refresh token stay), as a
  // provider does when it rotates signing keys or shortens lifetimes: the next use of it answers 401.
  if (req.method === 'POST' && req.url === '/api/expire') {
    await at.destroy();
    res.writeHead(204).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ sub: at.accountId, scope: at.scope, clientId: at.clientId }));
});
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
