import { Inject, Injectable } from '@nestjs/common';
import type { ConnectionProviderDefinition } from '@openwop-host/plugin-sdk';
import { HOST_CONFIG, HostConfig } from '../../../platform/config/host-config';
import { DomainError } from '../../../platform/errors/domain-error';
import { endpointAllowed, OAuthClientSettings, oauthSettings, OAuthSettings } from './oauth.settings';

/** Where the host talks to one provider's authorization server. */
export interface OAuthEndpoints {
  authorize: string;
  token: string;
  revoke?: string;
  /** The issuer, when known (from the client's `issuer` setting): `iss` on the callback must equal it (RFC 9207). */
  issuer?: string;
  /** The server says it sends `iss` on every authorization response: a callback without one is refused. */
  issRequired: boolean;
}

/** The token endpoint's answer (RFC 6749 §5.1), as sealed in the credential store. */
export interface TokenSet {
  access_token: string;
  token_type?: string;
  refresh_token?: string;
  /** Epoch milliseconds, from `expires_in`. */
  expires_at?: number;
  scope?: string;
}

export class OAuthProviderError extends DomainError {
  /** `terminal`: the provider refused the grant itself (`invalid_grant`, `invalid_client`...): only a new authorization helps. */
  constructor(readonly terminal: boolean, readonly providerError: string, message: string) {
    super(terminal ? 'connector_auth_expired' : 'oauth_provider_unavailable', terminal ? 409 : 502, message);
  }
}

const TIMEOUT_MS = 10_000;

/**
 * The host as an OAuth client (RFC 6749, RFC 7636, RFC 7009, RFC 8414): endpoint discovery, the token requests and
 * revocation. Never logs or returns a token, code or verifier; errors carry the provider's `error` code only.
 */
@Injectable()
export class OAuthProviderClient {
  private readonly metadata = new Map<string, { at: number; doc: Record<string, unknown> }>();
  readonly settings: OAuthSettings;

  constructor(@Inject(HOST_CONFIG) config: HostConfig) {
    this.settings = oauthSettings(config);
  }

  /** Whether OAuth is offered at all. */
  enabled(): boolean {
    return !!this.settings.callbackUrl && Object.keys(this.settings.clients).length > 0;
  }

  client(providerId: string): OAuthClientSettings | undefined {
    return this.enabled() ? this.settings.clients[providerId] : undefined;
  }

  /** The provider's endpoints: from the issuer's metadata when configured, else the pack's `auth.endpoints`. */
  async endpoints(providerId: string, provider: ConnectionProviderDefinition): Promise<OAuthEndpoints> {
    const client = this.client(providerId);
    if (!client || provider.auth.kind !== 'oauth2') throw unsupported(providerId);
    let out: OAuthEndpoints;
    if (client.issuer) {
      const doc = await this.discover(client.issuer);
      out = {
        authorize: String(doc.authorization_endpoint ?? ''),
        token: String(doc.token_endpoint ?? ''),
        revoke: typeof doc.revocation_endpoint === 'string' ? doc.revocation_endpoint : undefined,
        issuer: client.issuer,
        issRequired: doc.authorization_response_iss_parameter_supported === true,
      };
    } else {
      const e = provider.auth.endpoints ?? {};
      out = { authorize: e.authorize ?? '', token: e.token ?? '', revoke: e.revoke, issRequired: false };
    }
    if (!endpointAllowed(out.authorize, this.settings) || !endpointAllowed(out.token, this.settings) || (out.revoke && !endpointAllowed(out.revoke, this.settings))) {
      throw new DomainError('oauth_provider_unsupported', 422, `Provider "${providerId}" declares no usable authorization and token endpoints.`, { provider: providerId });
    }
    return out;
  }

  private async discover(issuer: string): Promise<Record<string, unknown>> {
    const cached = this.metadata.get(issuer);
    if (cached && Date.now() - cached.at < 3_600_000) return cached.doc;
    if (!endpointAllowed(issuer, this.settings)) throw new DomainError('oauth_provider_unsupported', 422, 'The configured issuer is not an https URL.');
    const base = issuer.replace(/\/$/, '');
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const res = await fetch(base + path, { signal: AbortSignal.timeout(TIMEOUT_MS), redirect: 'error' }).catch(() => undefined);
      if (!res?.ok) continue;
      const doc = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
      // RFC 8414 §3.3: the metadata's issuer must be the one asked for.
      if (doc && doc.issuer === issuer) {
        this.metadata.set(issuer, { at: Date.now(), doc });
        return doc;
      }
    }
    throw new DomainError('oauth_provider_unavailable', 502, 'The authorization server metadata could not be read.');
  }

  /** A token request (authorization_code or refresh_token grant) with the client's authentication. */
  async token(providerId: string, endpoint: string, params: Record<string, string>): Promise<TokenSet> {
    const client = this.client(providerId);
    if (!client) throw unsupported(providerId);
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    const body = new URLSearchParams(params);
    const secret = client.clientSecretEnv ? process.env[client.clientSecretEnv] : undefined;
    if (secret) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
    else body.set('client_id', client.clientId);
    let res: Response;
    try {
      res = await fetch(endpoint, { method: 'POST', headers, body: body.toString(), signal: AbortSignal.timeout(TIMEOUT_MS), redirect: 'error' });
    } catch {
      throw new OAuthProviderError(false, 'unreachable', 'The token endpoint did not answer.');
    }
    const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (!res.ok || typeof json.access_token !== 'string') {
      const error = typeof json.error === 'string' ? json.error.slice(0, 64) : `http_${res.status}`;
      // 400/401 with an OAuth error: the grant (code or refresh token) or the client is refused for good.
      throw new OAuthProviderError(res.status === 400 || res.status === 401, error, `The token endpoint refused the request (${error}).`);
    }
    const expiresIn = Number(json.expires_in);
    return {
      access_token: json.access_token,
      token_type: typeof json.token_type === 'string' ? json.token_type : undefined,
      refresh_token: typeof json.refresh_token === 'string' ? json.refresh_token : undefined,
      expires_at: Number.isFinite(expiresIn) && expiresIn > 0 ? Date.now() + expiresIn * 1000 : undefined,
      scope: typeof json.scope === 'string' ? json.scope : undefined,
    };
  }

  /** RFC 7009 revocation of one token; the answer is not an error the caller can act on, so only reachability counts. */
  async revoke(providerId: string, endpoint: string, token: string, hint: 'refresh_token' | 'access_token'): Promise<boolean> {
    const client = this.client(providerId);
    if (!client) return false;
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    const body = new URLSearchParams({ token, token_type_hint: hint });
    const secret = client.clientSecretEnv ? process.env[client.clientSecretEnv] : undefined;
    if (secret) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
    else body.set('client_id', client.clientId);
    const res = await fetch(endpoint, { method: 'POST', headers, body: body.toString(), signal: AbortSignal.timeout(TIMEOUT_MS), redirect: 'error' }).catch(() => undefined);
    return !!res?.ok;
  }
}

export function unsupported(providerId: string): DomainError {
  return new DomainError('oauth_provider_unsupported', 422, `The host offers no OAuth authorization for provider "${providerId}".`, { provider: providerId });
}
