import { ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as path from 'node:path';

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

/** A tiny cookie jar over fetch with manual redirects (the provider keys its interaction on cookies). */
class Browser {
  private cookies = new Map<string, string>();
  async go(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair.indexOf('=');
      this.cookies.set(pair.slice(0, i).trim(), pair.slice(i + 1));
    }
    return res;
  }
}

export async function startOidcProvider(config: OidcProviderConfig): Promise<OidcProvider> {
  const child: ChildProcess = spawn(process.execPath, [path.join(__dirname, 'oidc-provider-main.mjs'), JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += String(d)));
  const issuer = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += String(d);
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve((JSON.parse(out.slice(0, nl)) as { issuer: string }).issuer);
    });
    child.once('exit', (code) => reject(new Error(`oidc-provider exited (${code}): ${stderr}`)));
  });

  const authorize = async (authorizationUrl: string, user: string): Promise<URL> => {
    const browser = new Browser();
    let url = authorizationUrl;
    for (let hop = 0; hop < 12; hop++) {
      const res = await browser.go(url);
      if (res.status >= 300 && res.status < 400) {
        const next = new URL(res.headers.get('location')!, url);
        if (next.origin !== issuer) return next;
        url = next.toString();
        continue;
      }
      const html = await res.text();
      const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
      if (!action || !/name="login"/.test(html)) throw new Error(`no login form at ${url} (${res.status}): ${html.slice(0, 300)}`);
      const post = await browser.go(new URL(action, url).toString(), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ prompt: 'login', login: user, password: 'any' }).toString(),
      });
      url = new URL(post.headers.get('location')!, url).toString();
    }
    throw new Error('too many redirects');
  };

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
    async stop() {
      if (child.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
    },
  };
}
