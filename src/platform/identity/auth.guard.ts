import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { DomainError, ForbiddenError, NotFoundError, UnauthenticatedError } from '../errors/domain-error';
import { unbindRequestBody } from '../http/bound-ids';
import { requestProtocol } from '../http/protocol-version';
import { RateLimiterService } from '../rate-limit/rate-limiter.service';
import { ApiKeyService } from './api-key.service';
import { OPTIONAL_AUTH_KEY, PrincipalRequest, PUBLIC_KEY, SCOPES_ANY_KEY, SCOPES_KEY, SEAM_KEY } from './decorators';
import { JwtVerifier } from './jwt-verifier';
import { hasScopes } from './principal';
import { ConsoleSessions, cookieOf, SESSION_COOKIE, SESSION_HEADER } from './console-session.service';
import { ScimDirectory } from './scim/scim-directory.service';
import { bearerChallenge } from './protected-resource';
import { TokenLanes } from './token-lanes';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The one global guard: seam gate → authentication → rate limit → scopes (the protocol evaluates
 * rate limits before scopes). Public routes are rate-limited per client address, and so are
 * refused credentials (401s): once an address is over that budget its refusals become 429s, while
 * valid credentials from the same address keep working. Fails closed: a route that declares
 * neither @Scopes nor @Public is refused (and the route audit refuses to start the host with one).
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeyService,
    private readonly jwt: JwtVerifier,
    private readonly lanes: TokenLanes,
    private readonly scim: ScimDirectory,
    private readonly sessions: ConsoleSessions,
    private readonly limiter: RateLimiterService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    try {
      return await this.check(context);
    } catch (e) {
      this.challenge(context, e);
      throw e;
    }
  }

  /**
   * Major 2 with an OAuth2/OIDC lane configured (spec/v2/core/identity.md §2.5, RFC 0200 §B): a 401 names
   * Bearer and the RFC 9728 metadata (with `error="invalid_token"` only when a credential was presented),
   * a 403 for missing scopes `error="insufficient_scope"` with every scope the operation requires.
   */
  private challenge(context: ExecutionContext, e: unknown): void {
    const identity = this.config.identity;
    if (!identity?.oidc && !identity?.oauth2) return;
    const req = context.switchToHttp().getRequest<PrincipalRequest>();
    if (requestProtocol(req)?.major !== 2) return;
    const reply = context.switchToHttp().getResponse<{ header(name: string, value: string): unknown }>();
    if (e instanceof UnauthenticatedError) {
      reply.header('www-authenticate', bearerChallenge(req, req.headers.authorization === undefined ? undefined : 'invalid_token'));
    } else if (e instanceof ForbiddenError) {
      const required = (e.details as { requiredScopes?: unknown } | undefined)?.requiredScopes;
      if (Array.isArray(required) && required.length) reply.header('www-authenticate', bearerChallenge(req, 'insufficient_scope', required as string[]));
    }
  }

  private async check(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    const isSeam = this.reflector.getAllAndOverride<boolean>(SEAM_KEY, targets);
    // Seams that are off look exactly like routes that do not exist.
    if (isSeam && !this.config.testSeams) throw new NotFoundError('No such route.');
    const req = context.switchToHttp().getRequest<PrincipalRequest>();
    const isPublic = this.reflector.getAllAndOverride<boolean>(PUBLIC_KEY, targets);
    if (isPublic && !isSeam) {
      const optional = this.reflector.getAllAndOverride<boolean>(OPTIONAL_AUTH_KEY, targets);
      if (!optional || req.headers.authorization === undefined) {
        await this.limiter.take('public', 'address', req.ip);
        return true;
      }
      // A credential sent to a public route that reads one must be valid: a refused key is told so.
      try {
        req.principal = await this.authenticate(req);
      } catch (e) {
        if (e instanceof UnauthenticatedError) await this.limiter.take('auth-failures', 'address', req.ip);
        throw e;
      }
      await this.limiter.take('read', 'key', RateLimiterService.credentialKey(req.principal));
      return true;
    }
    const scopes = this.reflector.getAllAndOverride<string[]>(SCOPES_KEY, targets);
    if (!scopes && !isSeam) throw new ForbiddenError('This route declares no scopes and is closed.');

    // Refused credentials are counted per client address, and past the budget the address's further
    // refusals answer 429 instead of 401. A valid credential is never refused for them: behind one
    // address (a NAT, a proxy) other clients' failures must not lock a working key out.
    try {
      req.principal = await this.authenticate(req);
    } catch (e) {
      if (e instanceof UnauthenticatedError) await this.limiter.take('auth-failures', 'address', req.ip);
      throw e;
    }
    await this.limiter.take(READ_METHODS.has(req.method) ? 'read' : 'write', 'key', RateLimiterService.credentialKey(req.principal));
    // Major 2: a tenant-bound id in the path must name the caller's tenant; bound ids in a body are unbound (docs/versions.md).
    const protocol = requestProtocol(req);
    if (protocol?.boundTenant !== undefined && protocol.boundTenant !== req.principal.tenant) {
      throw new DomainError('id_tenant_mismatch', 403, 'The id in the path is bound to another tenant.');
    }
    if (protocol?.major === 2) unbindRequestBody(req, req.principal.tenant);
    if (scopes && !hasScopes(req.principal, scopes)) {
      throw new ForbiddenError('The credential lacks a required scope.', {
        requiredScopes: scopes,
        missingScopes: scopes.filter((s) => !req.principal!.scopes.has(s)),
      });
    }
    const anyOf = this.reflector.getAllAndOverride<string[]>(SCOPES_ANY_KEY, targets);
    if (anyOf && !anyOf.some((s) => hasScopes(req.principal!, [s]))) {
      throw new ForbiddenError(`The credential needs one of the scopes ${anyOf.join(', ')}.`, { requiredScopes: scopes ?? [], requiredAnyOfScopes: anyOf });
    }
    return true;
  }

  private async authenticate(req: PrincipalRequest) {
    const header = req.headers.authorization;
    // The console signed in by single sign-on: its session cookie, only with the header a cross-site page cannot send.
    const session = !header && req.headers[SESSION_HEADER] === '1' ? cookieOf(req.headers.cookie, SESSION_COOKIE) : undefined;
    if (session) {
      const principal = await this.sessions.principalOf(session);
      if (principal) return principal;
      throw new UnauthenticatedError('The console session has ended; sign in again.');
    }
    if (!header) throw new UnauthenticatedError('An Authorization: Bearer credential is required.');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw new UnauthenticatedError('The Authorization header must be "Bearer <token>".');
    const token = m[1];
    if (this.keys.looksLikeApiKey(token)) {
      const { principal, refusal } = await this.keys.verify(token);
      if (principal) return principal;
      if (refusal === 'expired') throw new UnauthenticatedError('The API key has expired.');
      if (refusal === 'revoked') throw new UnauthenticatedError('The API key has been revoked.');
      throw new UnauthenticatedError('The API key is not valid.');
    }
    // An identity provider's token (OIDC user bearer, OAuth2 client credentials): its `iss` picks the lane.
    const lane = token.split('.').length === 3 ? this.lanes.laneOf(token) : undefined;
    if (lane) return (await this.lanes.verify(token, lane, { audienceMismatch: requestProtocol(req)?.major === 2 })).principal;
    if (token.split('.').length === 3 && this.jwt.enabled) {
      const principal = await this.jwt.verify(req);
      // A principal SCIM deactivated or deleted is refused from then on, whatever its token says.
      if (principal && (await this.scim.subject(principal.tenant, principal.principal)).state !== 'deprovisioned') return principal;
      throw new UnauthenticatedError('The bearer token is not valid.');
    }
    throw new UnauthenticatedError('The bearer token is not valid.');
  }
}
