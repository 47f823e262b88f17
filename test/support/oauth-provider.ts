import { actAtProvider, startProviderProcess } from './provider-process';

/** A running authorization server (test/support/oauth-provider-main.mjs) in a child process. */
export interface OAuthProvider {
  issuer: string;
  /**
   * Plays the person at the provider: follows `authorizationUrl`, signs in as `user` on the login form, approves the
   * consent form and returns the redirect back to the client (the host's callback URL with code, state and iss).
   */
  consent(authorizationUrl: string, user: string): Promise<URL>;
  /** RFC 7009 revocation as the client (what another party, or the provider itself, does to a token). */
  revoke(token: string, client: { id: string; secret: string }): Promise<void>;
  /** The provider drops one access token early (grant and refresh token stay valid): its next use answers 401. */
  expireAccessToken(token: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startOAuthProvider(config: { clients: Record<string, unknown>[]; scopes: string[]; accounts: string[] }): Promise<OAuthProvider> {
  const { issuer, stop } = await startProviderProcess('oauth-provider-main.mjs', config);
  return {
    issuer,
    consent: (authorizationUrl, user) => actAtProvider(issuer, authorizationUrl, user),
    async revoke(token, client) {
      const res = await fetch(`${issuer}/token/revocation`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}` },
        body: new URLSearchParams({ token }).toString(),
      });
      if (!res.ok) throw new Error(`revocation: ${res.status}`);
    },
    async expireAccessToken(token) {
      const res = await fetch(`${issuer}/api/expire`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
      if (res.status !== 204) throw new Error(`expire: ${res.status}`);
    },
    stop,
  };
}
