import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res, UseInterceptors } from '@nestjs/common';
import { ApiBody, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags, ApiCreatedResponse } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { submittedText } from '../../../platform/http/json-text';
import { rawBodyText, VerbatimJsonInterceptor } from '../../../platform/http/verbatim-json.interceptor';
import { ValidationError } from '../../../platform/errors/domain-error';
import { CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { protocolSchemaRef } from '../../../platform/openapi/protocol-schemas';
import { arrayPage } from '../../../platform/pagination/keyset';
import { pageSchema, PageQuery } from '../../../platform/pagination/page-query';
import { ConsentPlanQuery, EgressCheckBody, PROVIDER_REF } from '../connections.dto';
import { CONNECTION_PACK_VIEW, CONSENT_PLAN, EGRESS_DECISION, INSTALL_RESULT, PROVIDER_RESOLUTION } from '../connections.openapi';
import { ConnectionPacksService, ConnectionPackView, InstallOutcome, ProviderResolution } from './connection-packs.service';
import type { ConsentPlan } from './consent-plan';
import type { EgressDecision } from './egress-check';

const NAME_PARAM = { name: 'name', description: 'The pack name, e.g. core.openwop.connections.github' };
const PROVIDER_PARAM = { name: 'providerId', description: 'A provider id, or <packName>#<id>.' };

/** Connection packs (RFC 0095) and provider resolution for the caller's tenant. */
@ApiTags('connections')
@Controller()
// Manifests go out as the bytes they were installed with.
@UseInterceptors(VerbatimJsonInterceptor)
export class ConnectionPacksController {
  constructor(private readonly packs: ConnectionPacksService) {}

  @Scopes('connections:manage')
  @Post('/v1/connection-packs')
  @ApiOperation({
    operationId: 'installConnectionPack',
    summary: 'Install a connection pack manifest',
    description:
      'Checks, in order: credential material (422 connection_pack_credential_material), the manifest schema (422 validation_error / connection_pack_invalid_api_host), semantics (https-only endpoints, one reach), then claims the provider id (409 connection_provider_conflict when another installed pack holds it). 201 when created, 200 when updated or unchanged.',
  })
  @ApiBody({ schema: protocolSchemaRef('ConnectionPackManifest') })
  @ApiCreatedResponse({ schema: INSTALL_RESULT })
  @ApiOkResponse({ schema: INSTALL_RESULT })
  @ApiErrors(400, 401, 403, 409, 413, 422)
  async install(@CurrentPrincipal() p: Principal, @Body() body: unknown, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<{ outcome: InstallOutcome; pack: ConnectionPackView }> {
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new ValidationError('The body must be a connection pack manifest (a JSON object).');
    const raw = rawBodyText(req);
    const result = await this.packs.install(p, body, 'api', raw === undefined ? undefined : submittedText(raw, undefined, body));
    reply.status(result.outcome === 'created' ? 201 : 200);
    return result;
  }

  @Scopes('connections:read')
  @Get('/v1/connection-packs')
  @ApiOperation({ operationId: 'listConnectionPacks', summary: 'List the connection packs installed for the tenant' })
  @ApiOkResponse({ schema: pageSchema('packs', CONNECTION_PACK_VIEW) })
  @ApiErrors(400, 401, 403)
  async list(@CurrentPrincipal() p: Principal, @Query() q: PageQuery): Promise<{ packs: ConnectionPackView[]; nextCursor: string | null }> {
    // Pack names are unique per tenant; the installed set is small and read from the registry.
    const page = arrayPage(await this.packs.list(p), (pack) => pack.name, q, { list: 'connection-packs', tenant: p.tenant, workspace: p.workspace });
    return { packs: page.items, nextCursor: page.nextCursor };
  }

  @Scopes('connections:read')
  @Get('/v1/connection-packs/:name')
  @ApiOperation({ operationId: 'getConnectionPack', summary: 'Read one installed connection pack' })
  @ApiParam(NAME_PARAM)
  @ApiOkResponse({ schema: CONNECTION_PACK_VIEW })
  @ApiErrors(401, 403, 404)
  get(@CurrentPrincipal() p: Principal, @Param('name') name: string): Promise<ConnectionPackView> {
    return this.packs.get(p, name);
  }

  @Scopes('connections:manage')
  @Delete('/v1/connection-packs/:name')
  @HttpCode(204)
  @ApiOperation({ operationId: 'uninstallConnectionPack', summary: 'Uninstall a connection pack (409 connection_pack_in_use while connections depend on it)' })
  @ApiParam(NAME_PARAM)
  @ApiNoContentResponse({ description: 'Uninstalled.' })
  @ApiErrors(401, 403, 404, 409)
  async uninstall(@CurrentPrincipal() p: Principal, @Param('name') name: string): Promise<void> {
    await this.packs.uninstall(p, name);
  }

  @Scopes('connections:read')
  @Get('/v1/connection-providers')
  @ApiOperation({ operationId: 'listConnectionProviders', summary: 'Every provider id of the tenant (built-ins and installed packs) and how it resolves' })
  @ApiOkResponse({ schema: pageSchema('providers', PROVIDER_RESOLUTION) })
  @ApiErrors(400, 401, 403)
  async providers(@CurrentPrincipal() p: Principal, @Query() q: PageQuery): Promise<{ providers: ProviderResolution[]; nextCursor: string | null }> {
    // Computed per request (built-ins merged with the tenant's claims): paged by provider id.
    const page = arrayPage(await this.packs.listProviders(p), (r) => r.providerId, q, { list: 'connection-providers', tenant: p.tenant, workspace: p.workspace });
    return { providers: page.items, nextCursor: page.nextCursor };
  }

  @Scopes('connections:read')
  @Get('/v1/connection-providers/:providerId')
  @ApiOperation({ operationId: 'resolveConnectionProvider', summary: 'Resolve a provider id (404 connection_provider_unresolved, 409 connection_provider_conflict)' })
  @ApiParam(PROVIDER_PARAM)
  @ApiOkResponse({ schema: PROVIDER_RESOLUTION })
  @ApiErrors(401, 403, 404, 409)
  async provider(@CurrentPrincipal() p: Principal, @Param('providerId') providerId: string): Promise<ProviderResolution> {
    return this.packs.requireProvider(p, checkProvider(providerId));
  }

  @Scopes('connections:read')
  @Get('/v1/connection-providers/:providerId/consent-plan')
  @ApiOperation({ operationId: 'getConnectionConsentPlan', summary: 'The consent plan: read groups first, write groups in a separate later step' })
  @ApiParam(PROVIDER_PARAM)
  @ApiOkResponse({ schema: CONSENT_PLAN })
  @ApiErrors(400, 401, 403, 404, 409)
  consentPlan(@CurrentPrincipal() p: Principal, @Param('providerId') providerId: string, @Query() q: ConsentPlanQuery): Promise<ConsentPlan & { providerId: string }> {
    return this.packs.consentPlan(p, checkProvider(providerId), q.requested ?? ['read']);
  }

  @Scopes('connections:read')
  @Post('/v1/connection-providers/:providerId/egress-check')
  @HttpCode(200)
  @ApiOperation({ operationId: 'checkConnectionEgress', summary: 'May a credential of this provider be sent to a host? (exact or dot-anchored apiHosts match; fails closed)' })
  @ApiParam(PROVIDER_PARAM)
  @ApiBody({ type: EgressCheckBody })
  @ApiOkResponse({ schema: EGRESS_DECISION })
  @ApiErrors(400, 401, 403)
  egress(@CurrentPrincipal() p: Principal, @Param('providerId') providerId: string, @Body() body: EgressCheckBody): Promise<EgressDecision | { allowed: false; code: string }> {
    return this.packs.egressCheck(p, checkProvider(providerId), body.requestHost);
  }
}

function checkProvider(providerId: string): string {
  if (!PROVIDER_REF.test(providerId)) throw new ValidationError('providerId must be a provider id or <packName>#<id>.', { fields: ['providerId'] });
  return providerId;
}
