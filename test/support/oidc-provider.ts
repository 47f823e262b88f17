import { createHash, randomBytes } from 'node:crypto';
import { actAtProvider, startProviderProcess } from './provider-process';

/** A running oidc-provider (test/support/oidc-provider-main.mjs) in a child process. */
export interface OidcProvider {
  issuer: string;
  /** A client-credentials access token (a JWT for the configured resource). */
  clientCredentials(clientId: string, secret: string, scope?: string): Promise<string>;
  /** The authorization-code + PKCE flow for a user, driven over HTTP through the provider's login form: the tokens. */
  signIn(user: string, client: { id: string; secret: string; redirectUri: string }, scope?: string): Promise<{ id_token: string; access_token: string }>;
  /** Follows a sign-in started elsewhere (an authorization URL), logs `user` in, returns the final redirect to the client. */
  authorize(authorizationUrl: string, user: string): Promise<URL>;
  stop(): Promise<void>;
}

export interface OidcProviderConfig {
  clients: Record<string, unknown>[];
  accounts: Record<string, Record<string, unknown>>;
  resource?: { audience: string; scope: string };
  tokenClaims?: Record<string, Record<string, unknown>>;
}

const b64url = (b: Buffer) => b.toString('base64url');

export async function startOidcProvider(config: OidcProviderConfig): Promise<OidcProvider> {
  const { issuer, stop } = await startProviderProcess('oidc-provider-main.mjs', config);
  const authorize = (authorizationUrl: string, user: string): Promise<URL> => actAtProvider(issuer, authorizationUrl, user);

  return {
    issuer,
    async clientCredentials(clientId, secret, scope) {
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` },
        body: new URLSearchParams({ grant_type: 'client_credentials', ...(scope ? { scope } : {}) }).toString(),
      });
      const body = (await res.json()) as { access_token?: string };
      if (!res.ok || !body.access_token) throw new Error(`client_credentials: ${res.status} ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async signIn(user, client, scope = 'openid groups email tenant') {
      const verifier = b64url(randomBytes(32));
      const challenge = b64url(createHash('sha256').update(verifier).digest());
      const state = b64url(randomBytes(12));
      const q = new URLSearchParams({ client_id: client.id, response_type: 'code', redirect_uri: client.redirectUri, scope, state, nonce: b64url(randomBytes(12)), code_challenge: challenge, code_challenge_method: 'S256' });
      const back = await authorize(`${issuer}/auth?${q}`, user);
      const code = back.searchParams.get('code');
      if (!code) throw new Error(`no code: ${back}`);
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}` },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier }).toString(),
      });
      const body = (await res.json()) as { id_token: string; access_token: string };
      if (!res.ok) throw new Error(`token: ${res.status} ${JSON.stringify(body)}`);
      return body;
    },
    authorize,
    stop,
  };
}
