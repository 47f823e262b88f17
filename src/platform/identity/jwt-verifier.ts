import { Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { Strategy as JwtStrategy, StrategyOptionsWithoutRequest } from 'passport-jwt';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { IDENTIFIER, Principal } from './principal';
import { expandRoles, isValidScope } from './scopes';

/** How far in the future an `iat` may be (clocks of the identity provider and this host differ a little). */
const CLOCK_SKEW_S = 60;

type StrategyCallbacks = {
  success(user: unknown): void;
  fail(challenge?: unknown): void;
  error(err: unknown): void;
  authenticate(req: unknown, options?: unknown): void;
};

/**
 * Verifies JWT bearer tokens with passport-jwt: an HS256 secret or an identity provider's JWKS,
 * pinned algorithms (never `none`), issuer and audience when configured. `exp` is required (a token
 * without one would never expire) and the lifetime it grants is capped by `OPENWOP_JWT_MAX_LIFETIME_S`
 * (measured from `iat`, or from now when the token has none). Tenant, workspace and principal claims
 * must be identifiers exactly like those of API keys; scopes that are not `name:action` and roles
 * the host does not define grant nothing. Tenant, workspace, principal and scope claims are configurable.
 */
@Injectable()
export class JwtVerifier {
  private readonly strategy?: JwtStrategy;

  constructor(@Inject(HOST_CONFIG) private readonly config: HostConfig) {
    const jwt = config.jwt;
    if (!jwt.secret && !jwt.jwksUrl) return;
    // passport-jwt (and jwks-rsa for a JWKS) load only when JWTs are accepted at all.
    const { ExtractJwt, Strategy } = require('passport-jwt') as typeof import('passport-jwt');
    const base = {
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      algorithms: jwt.algorithms,
      issuer: jwt.issuer,
      audience: jwt.audience,
      ignoreExpiration: false,
    };
    const options = (
      jwt.jwksUrl
        ? {
            ...base,
            secretOrKeyProvider: (require('jwks-rsa') as typeof import('jwks-rsa')).passportJwtSecret({ jwksUri: jwt.jwksUrl, cache: true, rateLimit: true, jwksRequestsPerMinute: 10 }),
          }
        : { ...base, secretOrKey: jwt.secret }
    ) as StrategyOptionsWithoutRequest;
    this.strategy = new Strategy(options, (payload: unknown, done: (err: unknown, user?: unknown) => void) => done(null, payload));
  }

  get enabled(): boolean {
    return !!this.strategy;
  }

  /** The principal of a JWT, or undefined when the token is not acceptable. */
  async verify(req: FastifyRequest): Promise<Principal | undefined> {
    if (!this.strategy) return undefined;
    const payload = await new Promise<Record<string, unknown> | undefined>((resolve) => {
      const s = Object.create(this.strategy!) as StrategyCallbacks;
      s.success = (user) => resolve(user as Record<string, unknown>);
      s.fail = () => resolve(undefined);
      s.error = () => resolve(undefined);
      s.authenticate(req, {});
    });
    if (!payload || typeof payload !== 'object') return undefined;
    if (!this.lifetimeAcceptable(payload)) return undefined;
    const c = this.config.jwt.claims;
    const tenant = payload[c.tenant];
    const principal = payload[c.principal];
    if (typeof tenant !== 'string' || !IDENTIFIER.test(tenant) || typeof principal !== 'string' || !IDENTIFIER.test(principal)) return undefined;
    const workspace = payload[c.workspace];
    // An absent workspace is a tenant-level token; a present one must be an identifier (an empty or
    // malformed one is refused, never widened to the whole tenant).
    if (workspace !== undefined && workspace !== null && (typeof workspace !== 'string' || !IDENTIFIER.test(workspace))) return undefined;
    const rawScopes = payload[c.scopes];
    const scopes = (
      Array.isArray(rawScopes)
        ? rawScopes.filter((s): s is string => typeof s === 'string')
        : typeof rawScopes === 'string'
          ? rawScopes.split(/\s+/).filter(Boolean)
          : []
    ).filter(isValidScope);
    const rawRoles = payload[c.roles];
    const roles = Array.isArray(rawRoles) ? rawRoles.filter((s): s is string => typeof s === 'string') : [];
    return {
      tenant,
      workspace: typeof workspace === 'string' ? workspace : undefined,
      principal,
      scopes: new Set([...scopes, ...expandRoles(roles)]),
      kind: 'jwt',
    };
  }

  /** `exp` present, and the lifetime it grants (from `iat`, else from now) within the configured maximum. */
  private lifetimeAcceptable(payload: Record<string, unknown>): boolean {
    const { exp, iat } = payload;
    if (typeof exp !== 'number' || !Number.isFinite(exp)) return false;
    const nowS = Date.now() / 1000;
    if (iat !== undefined && (typeof iat !== 'number' || !Number.isFinite(iat) || iat > nowS + CLOCK_SKEW_S)) return false;
    const from = typeof iat === 'number' ? iat : nowS;
    return exp - from <= this.config.jwt.maxLifetimeS;
  }
}
