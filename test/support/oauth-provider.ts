import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';

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

export async function startOAuthProvider(config: { clients: Record<string, unknown>[]; scopes: string[]; accounts: string[] }): Promise<OAuthProvider> {
  const child: ChildProcess = spawn(process.execPath, [path.join(__dirname, 'oauth-provider-main.mjs'), JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += String(d)));
  const issuer = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += String(d);
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve((JSON.parse(out.slice(0, nl)) as { issuer: string }).issuer);
    });
    child.once('exit', (code) => reject(new Error(`oauth provider exited (${code}): ${stderr}`)));
  });

  return {
    issuer,
    async consent(authorizationUrl, user) {
      const browser = new Browser();
      let url = authorizationUrl;
      for (let hop = 0; hop < 16; hop++) {
        const res = await browser.go(url);
        if (res.status >= 300 && res.status < 400) {
          const next = new URL(res.headers.get('location')!, url);
          if (next.origin !== issuer) return next;
          url = next.toString();
          continue;
        }
        const html = await res.text();
        const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
        if (!action) throw new Error(`no form at ${url} (${res.status}): ${html.slice(0, 300)}`);
        // The login form (prompt=login) or the consent form (prompt=consent): submit it as the person would.
        const isLogin = /name="login"/.test(html);
        const post = await browser.go(new URL(action, url).toString(), {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(isLogin ? { prompt: 'login', login: user, password: 'any' } : { prompt: 'consent' }).toString(),
        });
        if (post.status < 300 || post.status >= 400) throw new Error(`form post at ${action}: ${post.status} ${(await post.text()).slice(0, 300)}`);
        url = new URL(post.headers.get('location')!, url).toString();
      }
      throw new Error('too many redirects');
    },
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
    async stop() {
      if (child.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
    },
  };
}
