import { Inject, Injectable, Logger } from '@nestjs/common';
import type * as Jwt from 'jsonwebtoken';
import type { JwksClient } from 'jwks-rsa';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import type { TokenLaneSettings } from '../config/identity-settings';
import { ForbiddenError, UnauthenticatedError } from '../errors/domain-error';
import { IDENTIFIER, Principal } from './principal';
import { ScimDirectory } from './scim/scim-directory.service';
import { expandRoles, isValidScope } from './scopes';

/** Clock skew allowed on `exp`/`nbf`/`iat` between the identity provider and this host. */
const CLOCK_SKEW_S = 60;
/** A discovery document is re-read after this long; a failed read is retried on the next token. */
const DISCOVERY_TTL_MS = 3_600_000;
const FETCH_TIMEOUT_MS = 5_000;

/** jsonwebtoken, loaded with the first token a lane reads: a host without OIDC or OAuth2 lanes never loads it. */
const jwt = (): typeof Jwt => require('jsonwebtoken') as typeof Jwt;

/** Every refused token gets the same answer: which check failed is no business of the caller (no oracle). */
const refused = () => new UnauthenticatedError('The bearer token is not valid.');

/** A verified identity-provider token: its principal, lane and the claims a deprovisioning check reads. */
export interface LaneToken {
  principal: Principal;
  lane: 'oidc' | 'oauth2';
  issuer: string;
  subject: string;
}

/**
 * The OIDC user-bearer and OAuth2 client-credentials lanes (spec v1 auth-profiles.md): a JWT whose
 * `iss` is a trusted issuer of a lane is verified against that issuer's JWKS (from its discovery
 * document), with the lane's algorithms and audience, `exp` required, `nbf`/`iat` honoured; tenant,
 * workspace and principal come from the configured claims. OIDC tokens get the host roles their
 * groups map to in their tenant (none: 403, fail closed); client-credentials tokens get the host
 * scopes of their `scope` claim. Any verification failure is one 401 `unauthenticated`. A principal
 * SCIM deprovisioned is refused like an invalid token; an OIDC user's SCIM groups count with its claim.
 */
@Injectable()
export class TokenLanes {
  private readonly log = new Logger('TokenLanes');
  private readonly lanes: TokenLaneSettings[];
  private readonly warned = new Map<string, number>();
  private readonly docs = new Map<string, { doc: Record<string, unknown> & { jwks_uri: string }; client: JwksClient; at: number }>();

  constructor(
    @Inject(HOST_CONFIG) config: HostConfig,
    private readonly scim: ScimDirectory,
  ) {
    const id = config.identity;
    this.lanes = [id?.oidc, id?.oauth2].filter((l): l is TokenLaneSettings => !!l);
  }

  get enabled(): boolean {
    return this.lanes.length > 0;
  }

  /** The lane a token's unverified `iss` (and `aud`, when two lanes share an issuer) points at, if any. */
  laneOf(token: string): TokenLaneSettings | undefined {
    if (!this.lanes.length) return undefined;
    const decoded = jwt().decode(token, { json: true });
    if (!decoded || typeof decoded.iss !== 'string') return undefined;
    const candidates = this.lanes.filter((l) => l.issuers.includes(decoded.iss!));
    if (candidates.length <= 1) return candidates[0];
    const aud = Array.isArray(decoded.aud) ? decoded.aud : [decoded.aud];
    return candidates.find((l) => aud.includes(l.audience)) ?? candidates[0];
  }

  /**
   * `audienceMismatch`: a token whose signature verifies but which was minted for another audience is
   * refused with the code `audience_mismatch` (spec/v2/core/identity.md §2.1, major 2) instead of the
   * uniform refusal.
   */
  async verify(token: string, lane: TokenLaneSettings, opts: { audienceMismatch?: boolean } = {}): Promise<LaneToken> {
    const complete = jwt().decode(token, { complete: true });
    if (!complete || typeof complete.payload !== 'object' || !complete.payload) throw refused();
    const { header } = complete;
    const iss = (complete.payload as Jwt.JwtPayload).iss;
    if (typeof iss !== 'string' || !lane.issuers.includes(iss) || !lane.algorithms.includes(header.alg) || typeof header.kid !== 'string') throw refused();
    let key: string;
    try {
      const client = await this.client(iss);
      key = (await client.getSigningKey(header.kid)).getPublicKey();
    } catch (e) {
      this.log.debug({ msg: 'signing key not resolved', issuer: iss, err: (e as Error).message });
      throw refused();
    }
    let payload: Jwt.JwtPayload;
    try {
      payload = jwt().verify(token, key, {
        algorithms: lane.algorithms as Jwt.Algorithm[],
        issuer: iss,
        audience: lane.audience,
        clockTolerance: CLOCK_SKEW_S,
        complete: false,
      }) as Jwt.JwtPayload;
    } catch (e) {
      // jsonwebtoken checks the signature, then the dates, then the audience: this one verified and is current.
      if (opts.audienceMismatch && e instanceof jwt().JsonWebTokenError && e.message.startsWith('jwt audience invalid')) {
        throw new UnauthenticatedError('The token was issued for another audience.', 'audience_mismatch');
      }
      throw refused();
    }
    if (typeof payload.exp !== 'number') throw refused();
    if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + CLOCK_SKEW_S) throw refused();
    return await this.principalOf(payload, lane, iss);
  }

  private async principalOf(payload: Jwt.JwtPayload, lane: TokenLaneSettings, issuer: string): Promise<LaneToken> {
    const c = lane.claims;
    const rawPrincipal = payload[c.principal] ?? payload.sub;
    if (typeof rawPrincipal !== 'string' || !IDENTIFIER.test(rawPrincipal)) throw refused();
    const claimedTenant = payload[c.tenant];
    if (claimedTenant !== undefined && (typeof claimedTenant !== 'string' || !IDENTIFIER.test(claimedTenant))) throw refused();
    const tenant = (claimedTenant as string | undefined) ?? lane.defaultTenant;
    if (!tenant) throw new ForbiddenError('The token names no tenant this host serves.');
    const workspace = payload[c.workspace];
    if (workspace !== undefined && workspace !== null && (typeof workspace !== 'string' || !IDENTIFIER.test(workspace))) throw refused();
    // A principal SCIM deactivated or deleted is refused from then on; an active one adds its SCIM groups.
    const provisioned = await this.scim.subject(tenant, rawPrincipal);
    if (provisioned.state === 'deprovisioned') throw refused();
    let scopes: string[];
    if (lane.kind === 'oidc') {
      const groups = [...listClaim(payload[c.groups]), ...(provisioned.state === 'active' ? provisioned.groups : [])];
      const roles = new Set<string>();
      for (const table of [lane.groupRoles['*'], lane.groupRoles[tenant]]) {
        if (!table) continue;
        for (const g of groups) if (Object.prototype.hasOwnProperty.call(table, g)) for (const r of table[g]) roles.add(r);
      }
      scopes = expandRoles([...roles]);
      if (!scopes.length) throw new ForbiddenError('The token\'s groups map to no role in this tenant.', { requiredScopes: [] });
    } else {
      scopes = listClaim(payload[c.scopes]).filter(isValidScope);
    }
    return {
      principal: { tenant, workspace: typeof workspace === 'string' ? workspace : undefined, principal: rawPrincipal, scopes: new Set(scopes), kind: 'jwt', idp: { lane: lane.kind, issuer } },
      lane: lane.kind,
      issuer,
      subject: typeof payload.sub === 'string' ? payload.sub : rawPrincipal,
    };
  }

  /** An ID token of the console's sign-in: the OIDC lane's checks with the console client as audience, and its nonce. */
  async verifyIdToken(token: string, audience: string, nonce: string): Promise<LaneToken> {
    const oidc = this.lanes.find((l) => l.kind === 'oidc');
    if (!oidc) throw refused();
    const claimed = (jwt().decode(token, { json: true }) ?? {}).nonce;
    if (typeof claimed !== 'string' || claimed !== nonce) throw refused();
    return this.verify(token, { ...oidc, audience });
  }

  /** An issuer's discovery document (OpenID Connect Discovery 1.0), read lazily, cached an hour, its issuer checked; failures not cached. */
  async discovery(issuer: string): Promise<Record<string, unknown> & { jwks_uri: string }> {
    const cached = this.docs.get(issuer);
    if (cached && Date.now() - cached.at < DISCOVERY_TTL_MS) return cached.doc;
    const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    let doc: Record<string, unknown>;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: 'error' });
      if (!res.ok) throw new UnauthenticatedError(`discovery answered ${res.status}`);
      doc = (await res.json()) as Record<string, unknown>;
      // §4.3: the document's issuer must be the one asked for.
      if (doc.issuer !== issuer || typeof doc.jwks_uri !== 'string') throw new UnauthenticatedError('the discovery document names another issuer or no jwks_uri');
    } catch (e) {
      // Every token of the issuer is refused meanwhile (fail closed): the operator must see why, once a minute at most.
      const last = this.warned.get(issuer) ?? 0;
      if (Date.now() - last > 60_000) {
        this.warned.set(issuer, Date.now());
        this.log.warn({ msg: 'identity provider discovery failed: its tokens are refused until it answers', issuer, url, err: (e as Error).message });
      }
      throw refused();
    }
    const { JwksClient } = require('jwks-rsa') as typeof import('jwks-rsa');
    const client = new JwksClient({ jwksUri: doc.jwks_uri, cache: true, cacheMaxAge: 600_000, rateLimit: true, jwksRequestsPerMinute: 30, timeout: FETCH_TIMEOUT_MS });
    const entry = { doc: doc as Record<string, unknown> & { jwks_uri: string }, client, at: Date.now() };
    this.docs.set(issuer, entry);
    return entry.doc;
  }

  /** The JWKS client of an issuer, from its discovery document. */
  private async client(issuer: string): Promise<JwksClient> {
    await this.discovery(issuer);
    return this.docs.get(issuer)!.client;
  }
}

function listClaim(v: unknown): string[] {
  if (Array.isArray(v)) return v.filter((s): s is string => typeof s === 'string');
  if (typeof v === 'string') return v.split(/\s+/).filter(Boolean);
  return [];
}
