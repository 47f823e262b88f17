import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth, ApiExtension } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { Principal } from './principal';
import { InvariantViolation } from '../errors/internal-fault';

export const SCOPES_KEY = 'openwop:scopes';
export const SCOPES_ANY_KEY = 'openwop:scopes-any';
export const PUBLIC_KEY = 'openwop:public';
export const SEAM_KEY = 'openwop:seam';
export const OPTIONAL_AUTH_KEY = 'openwop:optional-auth';

/**
 * Declares the scopes a route requires (all of them). Also writes them into the OpenAPI document as
 * `x-required-scopes` with the bearer security requirement, so the document shows who can reach what.
 */
export function Scopes(...scopes: string[]) {
  return applyDecorators(
    SetMetadata(SCOPES_KEY, scopes),
    ApiBearerAuth('bearer'),
    ApiExtension('x-required-scopes', scopes),
  );
}

/**
 * Declares that a route also requires ONE of `scopes` (beside every scope of `@Scopes`): for an
 * operation two authorities each cover. Written into the OpenAPI document as `x-required-scopes-any-of`.
 */
export function AnyScope(...scopes: string[]) {
  return applyDecorators(SetMetadata(SCOPES_ANY_KEY, scopes), ApiExtension('x-required-scopes-any-of', scopes));
}

/** A route anyone may call without a credential. */
export function Public() {
  return applyDecorators(SetMetadata(PUBLIC_KEY, true), ApiExtension('x-required-scopes', []));
}

/**
 * A public route that also reads a credential when one is sent (auth-scoped discovery): without
 * Authorization it answers anonymously; with one, the credential must verify (else 401) and the
 * route sees its principal.
 */
export function PublicWithOptionalPrincipal() {
  return applyDecorators(Public(), SetMetadata(OPTIONAL_AUTH_KEY, true));
}

/**
 * A conformance test seam under /v1/host/sample/*: answers 404 unless OPENWOP_TEST_SEAMS=true, and
 * always requires an authenticated principal (plus any @Scopes declared).
 */
export function TestSeam() {
  return applyDecorators(SetMetadata(SEAM_KEY, true), ApiExtension('x-test-seam', true));
}

export interface PrincipalRequest extends FastifyRequest {
  principal?: Principal;
}

/** The verified principal of the request (set by the authentication guard). */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const req = ctx.switchToHttp().getRequest<PrincipalRequest>();
  if (!req.principal) {
    // A guard was skipped: refuse rather than run unscoped.
    throw new InvariantViolation('no principal on the request');
  }
  return req.principal;
});
