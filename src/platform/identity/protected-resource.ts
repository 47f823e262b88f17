import { Controller, Get, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Inject } from '@nestjs/common';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import type { IdentitySettings } from '../config/identity-settings';
import { Public } from './decorators';
import { ALL_HOST_SCOPES } from './scopes';

export const PRM_PATH = '/.well-known/oauth-protected-resource';

/** The resource identifier of this host as the caller reached it (RFC 9728 §1.2: the origin, no path). */
export function resourceOf(req: Pick<FastifyRequest, 'protocol' | 'headers'>): string {
  return `${req.protocol}://${req.headers.host}`;
}

/** The URL-form issuers of the OIDC and OAuth2 lanes: RFC 9728 `authorization_servers`. */
export function authorizationServers(identity: IdentitySettings | undefined): string[] {
  return [...new Set([...(identity?.oidc?.issuers ?? []), ...(identity?.oauth2?.issuers ?? [])])].sort();
}

/** A `WWW-Authenticate` Bearer challenge (RFC 6750 §3, RFC 9728 §5.1) naming the metadata, and the refusal when a credential was refused. */
export function bearerChallenge(req: Pick<FastifyRequest, 'protocol' | 'headers'>, error?: 'invalid_token' | 'insufficient_scope', scopes?: readonly string[]): string {
  const parts = [
    ...(error ? [`error="${error}"`] : []),
    ...(scopes?.length ? [`scope="${scopes.join(' ')}"`] : []),
    `resource_metadata="${resourceOf(req)}${PRM_PATH}"`,
  ];
  return `Bearer ${parts.join(', ')}`;
}

/**
 * RFC 9728 OAuth 2.0 Protected Resource Metadata (spec/v2/core/identity.md §2.5, RFC 0200 §A): where a
 * generic OAuth client learns which authorization servers this host trusts. A projection of the v2
 * `auth.lanes[]` (the OIDC and OAuth2 issuers), served unauthenticated while such a lane is configured
 * (404 otherwise).
 */
@ApiExcludeController()
@Controller()
export class ProtectedResourceController {
  constructor(@Inject(HOST_CONFIG) private readonly config: HostConfig) {}

  @Public()
  @Get(PRM_PATH)
  async metadata(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const servers = authorizationServers(this.config.identity);
    if (!servers.length) {
      await reply.status(404).send({ error: 'not_found', message: 'No such route.' });
      return;
    }
    await reply.header('cache-control', 'public, max-age=300').send({
      resource: resourceOf(req),
      authorization_servers: servers,
      scopes_supported: [...ALL_HOST_SCOPES],
      bearer_methods_supported: ['header'],
      resource_name: 'OpenWOP host',
    });
  }
}
