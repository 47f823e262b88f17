import type { HostConfig } from '../../../platform/config/host-config';

/** One OAuth client the host is registered as at a provider (RFC 0047): never in a pack, always host configuration. */
export interface OAuthClientSettings {
  clientId: string;
  /** Name of the environment variable holding the client secret (confidential client, `client_secret_basic`); unset: a public client (PKCE only). */
  clientSecretEnv?: string;
  /** The authorization server's issuer: endpoints come from its metadata (RFC 8414 / OIDC discovery) and `iss` (RFC 9207) is checked against it. Unset: the pack's `auth.endpoints`. */
  issuer?: string;
  /** Scopes this client may request beyond the pack's scope groups (e.g. `offline_access`), always requested. */
  extraScopes?: string[];
}

/** `connections.oauth` of OPENWOP_CONFIG. OAuth is offered only when `callbackUrl` is set and at least one client is configured. */
export interface OAuthSettings {
  /** The public URL of `GET /v1/oauth/callback` on this host (what the provider redirects the browser to). */
  callbackUrl?: string;
  clients: Record<string, OAuthClientSettings>;
  /** A token expiring within this many seconds is refreshed before use (default 60). */
  refreshSkewSeconds: number;
  /** How long an authorization may take before its callback is refused (default 600). */
  authorizationTtlSeconds: number;
  /** Development only: allow `http://` provider endpoints on loopback addresses (default false). */
  allowInsecureLoopback: boolean;
}

export function oauthSettings(config: Pick<HostConfig, 'file'>): OAuthSettings {
  const s = ((config.file.connections ?? {}) as { oauth?: Partial<OAuthSettings> }).oauth ?? {};
  return {
    callbackUrl: s.callbackUrl,
    clients: s.clients ?? {},
    refreshSkewSeconds: s.refreshSkewSeconds ?? 60,
    authorizationTtlSeconds: s.authorizationTtlSeconds ?? 600,
    allowInsecureLoopback: s.allowInsecureLoopback ?? false,
  };
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** An endpoint the host may call or send a browser to: https, or http on loopback when allowed. */
export function endpointAllowed(url: string | undefined, s: Pick<OAuthSettings, 'allowInsecureLoopback'>): url is string {
  if (!url) return false;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (u.username || u.password) return false;
  if (u.protocol === 'https:') return true;
  return u.protocol === 'http:' && s.allowInsecureLoopback && LOOPBACK.has(u.hostname);
}
