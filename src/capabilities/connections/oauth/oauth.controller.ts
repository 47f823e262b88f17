import { Body, Controller, Delete, Get, Param, Post, Query } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Public, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { AuthorizeAnswer, AuthorizeBody } from './oauth.dto';
import { GrantView, OAuthService } from './oauth.service';

const GRANT = {
  type: 'object',
  properties: {
    connectionId: { type: 'string' },
    provider: { type: 'string' },
    principal: { type: 'string', nullable: true },
    credentialRef: { type: 'string' },
    scopes: { type: 'array', items: { type: 'string' } },
    expiresAt: { type: 'string', nullable: true },
    status: { type: 'string', enum: ['active', 'expired'] },
  },
};
const ID_PARAM = { name: 'id', description: 'Connection id (uuid).' };

/** OAuth connections (RFC 0047): authorize, the provider's callback, grants, revoke. */
@ApiTags('connections')
@Controller()
export class OAuthController {
  constructor(private readonly oauth: OAuthService) {}

  @Scopes('connections:read')
  @Post('/v1/connections/:id/oauth/authorize')
  @ApiOperation({
    operationId: 'authorizeConnection',
    summary: "Start the authorization-code grant (PKCE, state) for the caller's own grant on an OAuth connection",
    description: '422 oauth_provider_unsupported (no OAuth client for the provider, or the provider is not oauth2), 422 oauth_scope_unsupported.',
  })
  @ApiParam(ID_PARAM)
  @ApiBody({ type: AuthorizeBody })
  @ApiOkResponse({ type: AuthorizeAnswer })
  @ApiErrors(400, 401, 403, 404, 422)
  authorize(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Body() body: AuthorizeBody): Promise<AuthorizeAnswer> {
    return this.oauth.authorize(p, id, body);
  }

  @Public()
  @Get('/v1/oauth/callback')
  @ApiOperation({
    operationId: 'oauthCallback',
    summary: "The provider's redirect back with code and state: completes the grant (no credential: the single-use state authenticates it)",
    description: '400 oauth_state_invalid (unknown, used or expired state), oauth_issuer_mismatch (RFC 9207), oauth_authorization_denied; 409 connector_auth_expired when the code is refused.',
  })
  @ApiQuery({ name: 'state', required: true }) @ApiQuery({ name: 'code', required: false }) @ApiQuery({ name: 'iss', required: false }) @ApiQuery({ name: 'error', required: false })
  @ApiOkResponse({ schema: GRANT })
  @ApiErrors(400, 409, 422, 502)
  callback(@Query() q: Record<string, string>): Promise<GrantView> {
    const one = (v: unknown) => (typeof v === 'string' ? v : undefined);
    return this.oauth.callback({ state: one(q.state), code: one(q.code), iss: one(q.iss), error: one(q.error) });
  }

  @Scopes('connections:read')
  @Get('/v1/connections/:id/oauth')
  @ApiOperation({ operationId: 'listConnectionGrants', summary: "The caller's own OAuth grant on a connection and the tenant's shared one (references only)" })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ schema: { type: 'object', properties: { grants: { type: 'array', items: GRANT } } } })
  @ApiErrors(401, 403, 404)
  async grants(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<{ grants: GrantView[] }> {
    return { grants: await this.oauth.grants(p, id) };
  }

  @Scopes('connections:read')
  @Delete('/v1/connections/:id/oauth')
  @ApiOperation({ operationId: 'revokeConnectionGrant', summary: "Revoke the caller's own grant (or, ?shared=true, the tenant's) at the provider and delete its tokens" })
  @ApiParam(ID_PARAM)
  @ApiQuery({ name: 'shared', required: false })
  @ApiOkResponse({ schema: { type: 'object', properties: { revokedAtProvider: { type: 'boolean' } } } })
  @ApiErrors(401, 403, 404)
  revoke(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Query('shared') shared?: string): Promise<{ revokedAtProvider: boolean }> {
    return this.oauth.revoke(p, id, shared === 'true');
  }
}
