import { Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { passportJwtSecret } from 'jwks-rsa';
import { ExtractJwt, Strategy as JwtStrategy, StrategyOptionsWithoutRequest } from 'passport-jwt';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { Principal } from './principal';
import { expandRoles } from './scopes';

type StrategyCallbacks = {
  success(user: unknown): void;
  fail(challenge?: unknown): void;
  error(err: unknown): void;
  authenticate(req: unknown, options?: unknown): void;
};

/**
 * Verifies JWT bearer tokens with passport-jwt: an HS256 secret or an identity provider's JWKS,
 * pinned algorithms (never `none`), issuer and audience when configured, expiry enforced.
 * Tenant, workspace, principal and scope claims are configurable.
 */
@Injectable()
export class JwtVerifier {
  private readonly strategy?: JwtStrategy;

  constructor(@Inject(HOST_CONFIG) private readonly config: HostConfig) {
    const jwt = config.jwt;
    if (!jwt.secret && !jwt.jwksUrl) return;
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
            secretOrKeyProvider: passportJwtSecret({ jwksUri: jwt.jwksUrl, cache: true, rateLimit: true, jwksRequestsPerMinute: 10 }),
          }
        : { ...base, secretOrKey: jwt.secret }
    ) as StrategyOptionsWithoutRequest;
    this.strategy = new JwtStrategy(options, (payload: unknown, done: (err: unknown, user?: unknown) => void) => done(null, payload));
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
    const c = this.config.jwt.claims;
    const tenant = payload[c.tenant];
    const principal = payload[c.principal];
    if (typeof tenant !== 'string' || !tenant || typeof principal !== 'string' || !principal) return undefined;
    const workspace = payload[c.workspace];
    const rawScopes = payload[c.scopes];
    const scopes = Array.isArray(rawScopes)
      ? rawScopes.filter((s): s is string => typeof s === 'string')
      : typeof rawScopes === 'string'
        ? rawScopes.split(/\s+/).filter(Boolean)
        : [];
    const rawRoles = payload[c.roles];
    const roles = Array.isArray(rawRoles) ? rawRoles.filter((s): s is string => typeof s === 'string') : [];
    return {
      tenant,
      workspace: typeof workspace === 'string' && workspace ? workspace : undefined,
      principal,
      scopes: new Set([...scopes, ...expandRoles(roles)]),
      kind: 'jwt',
    };
  }
}
