import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { DataSource, LessThan } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import type { ConsoleSignInSettings } from '../config/identity-settings';
import { UnauthenticatedError } from '../errors/domain-error';
import { ConsoleSessionEntity } from './console-session.entity';
import { Principal } from './principal';
import { ScimDirectory } from './scim/scim-directory.service';
import { TokenLanes } from './token-lanes';

export const SESSION_COOKIE = 'openwop_session';

/** The `Set-Cookie` value of a console session (HttpOnly, the whole host, `Secure` when served over https); an empty session clears it. */
export function sessionCookie(session: string, maxAgeS: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${session}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeS}${secure ? '; Secure' : ''}`;
}
export const LOGIN_COOKIE = 'openwop_login';
/** The header a cookie-authenticated API request must carry: a cross-site page cannot set it without a CORS preflight the host never grants (CSRF). */
export const SESSION_HEADER = 'x-openwop-session';
const LOGIN_TTL_MS = 600_000;

const b64url = (b: Buffer) => b.toString('base64url');
const digest = (secret: string) => createHash('sha256').update(secret).digest('hex');

export function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

/**
 * Console single sign-on (authorization code + PKCE, RFC 7636; state and nonce checked): the host is
 * the OIDC client, the ID token is verified by the OIDC lane with the console client as audience and
 * mapped to a principal exactly like a bearer token (groups → roles per tenant, fail closed, SCIM
 * deprovisioning honoured), and the session lives in the database; the browser holds only an
 * HttpOnly cookie naming it. API requests authenticated by the cookie must carry `X-OpenWOP-Session`.
 */
@Injectable()
export class ConsoleSessions {
  constructor(
    private readonly ds: DataSource,
    private readonly lanes: TokenLanes,
    private readonly scim: ScimDirectory,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  get settings(): ConsoleSignInSettings | undefined {
    return this.config.identity?.console;
  }

  /** Starts a sign-in: the authorization URL to send the browser to, and the state its cookie binds. */
  async begin(): Promise<{ url: string; state: string }> {
    const s = this.required();
    const doc = await this.lanes.discovery(s.issuer);
    if (typeof doc.authorization_endpoint !== 'string') throw new UnauthenticatedError('The identity provider publishes no authorization endpoint.');
    const state = b64url(randomBytes(24));
    const nonce = b64url(randomBytes(24));
    const verifier = b64url(randomBytes(32));
    const repo = this.ds.getRepository(ConsoleSessionEntity);
    await repo.delete({ expiresAt: LessThan(new Date()) });
    await repo.insert({ id: digest(state), kind: 'login', nonce, verifier, scopes: [], expiresAt: new Date(Date.now() + LOGIN_TTL_MS) });
    const q = new URLSearchParams({
      response_type: 'code',
      client_id: s.clientId,
      redirect_uri: s.redirectUrl,
      scope: s.scopes,
      state,
      nonce,
      code_challenge: b64url(createHash('sha256').update(verifier).digest()),
      code_challenge_method: 'S256',
    });
    return { url: `${doc.authorization_endpoint}?${q}`, state };
  }

  /** Completes a sign-in: the state must be the browser's own (its cookie) and unused; the code is exchanged with the PKCE verifier. */
  async complete(code: string, state: string, cookieState: string | undefined): Promise<{ session: string; maxAgeS: number }> {
    const s = this.required();
    if (!cookieState || cookieState !== state) throw new UnauthenticatedError('The sign-in was not started in this browser.');
    const repo = this.ds.getRepository(ConsoleSessionEntity);
    const pending = await repo.findOneBy({ id: digest(state), kind: 'login' });
    // One use only, whatever happens next.
    if (pending) await repo.delete({ id: pending.id });
    if (!pending || pending.expiresAt.getTime() < Date.now()) throw new UnauthenticatedError('The sign-in expired or was already used.');
    const doc = await this.lanes.discovery(s.issuer);
    if (typeof doc.token_endpoint !== 'string') throw new UnauthenticatedError('The identity provider publishes no token endpoint.');
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    const form: Record<string, string> = { grant_type: 'authorization_code', code, redirect_uri: s.redirectUrl, code_verifier: pending.verifier! };
    if (s.clientSecret) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(s.clientId)}:${encodeURIComponent(s.clientSecret)}`).toString('base64')}`;
    else form.client_id = s.clientId;
    const res = await fetch(doc.token_endpoint, { method: 'POST', headers, body: new URLSearchParams(form).toString(), signal: AbortSignal.timeout(10_000), redirect: 'error' });
    const body = (await res.json().catch(() => ({}))) as { id_token?: unknown };
    if (!res.ok || typeof body.id_token !== 'string') throw new UnauthenticatedError('The identity provider did not issue an ID token.');
    const { principal } = await this.lanes.verifyIdToken(body.id_token, s.clientId, pending.nonce!);
    return { session: await this.open(principal, s.issuer, s.sessionTtlS), maxAgeS: s.sessionTtlS };
  }

  /** Opens a session for a principal an identity provider signed in (OIDC here, SAML in saml/): the secret for the cookie. */
  async open(principal: Principal, issuer: string, ttlS: number): Promise<string> {
    const session = b64url(randomBytes(32));
    await this.ds.getRepository(ConsoleSessionEntity).insert({
      id: digest(session),
      kind: 'session',
      tenant: principal.tenant,
      workspace: principal.workspace ?? null,
      principal: principal.principal,
      scopes: [...principal.scopes].sort(),
      issuer,
      expiresAt: new Date(Date.now() + ttlS * 1000),
    });
    return session;
  }

  /** The principal of a session cookie, if it names a live session of a principal SCIM has not deprovisioned. */
  async principalOf(session: string): Promise<Principal | undefined> {
    if (!this.settings && !this.config.identity?.saml) return undefined;
    const row = await this.ds.getRepository(ConsoleSessionEntity).findOneBy({ id: digest(session), kind: 'session' });
    if (!row || row.expiresAt.getTime() < Date.now() || !row.tenant || !row.principal) return undefined;
    if ((await this.scim.subject(row.tenant, row.principal)).state === 'deprovisioned') return undefined;
    const issuer = row.issuer ?? this.settings?.issuer;
    if (!issuer) return undefined;
    return { tenant: row.tenant, workspace: row.workspace ?? undefined, principal: row.principal, scopes: new Set(row.scopes), kind: 'jwt', idp: { lane: 'session', issuer } };
  }

  /** Ends a session (sign-out): the row is deleted, so the cookie is worthless even if kept. The IdP's end-session URL, if any. */
  async end(session: string | undefined): Promise<string | undefined> {
    if (session) await this.ds.getRepository(ConsoleSessionEntity).delete({ id: digest(session) });
    const s = this.settings;
    if (!s) return undefined;
    const doc = await this.lanes.discovery(s.issuer).catch(() => undefined);
    return typeof doc?.end_session_endpoint === 'string' ? `${doc.end_session_endpoint}?${new URLSearchParams({ client_id: s.clientId })}` : undefined;
  }

  private required(): ConsoleSignInSettings {
    const s = this.settings;
    if (!s) throw new UnauthenticatedError('Single sign-on is not configured on this host.');
    return s;
  }
}
