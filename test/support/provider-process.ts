import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';

/** A tiny cookie jar over fetch with manual redirects (a provider keys its interaction on cookies). */
export class CookieBrowser {
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

/** A provider script of test/support started in a child process: it prints `{issuer}` on its first line. */
export interface ProviderProcess {
  issuer: string;
  /** Everything the provider printed on its first line (a SAML provider adds its certificate). */
  info: Record<string, unknown>;
  stop(): Promise<void>;
}

export async function startProviderProcess(script: string, config: unknown): Promise<ProviderProcess> {
  const child: ChildProcess = spawn(process.execPath, [path.join(__dirname, script), JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += String(d)));
  const info = await new Promise<Record<string, unknown>>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += String(d);
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(JSON.parse(out.slice(0, nl)) as Record<string, unknown>);
    });
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}): ${stderr}`)));
  });
  return {
    issuer: info.issuer as string,
    info,
    async stop() {
      if (child.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
    },
  };
}

/**
 * Plays the person at an oidc-provider: follows `authorizationUrl`, signs in as `user` on the login form, approves a
 * consent form if one is shown, and returns the redirect that leaves the provider (back to the client).
 */
export async function actAtProvider(issuer: string, authorizationUrl: string, user: string): Promise<URL> {
  const browser = new CookieBrowser();
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
}
