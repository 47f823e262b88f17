import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import { ValidationError } from '../../../platform/errors/domain-error';
import { CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { ProviderRegistryService, RegistryProvider, RegistryRefusal } from './provider-registry';

const PROVIDER = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'source'],
  properties: {
    id: { type: 'string', description: 'The bare provider id.' },
    source: { type: 'string', enum: ['builtin', 'pack'] },
    packName: { type: 'string', description: 'The installed pack that defines it; present exactly when source is pack.' },
  },
};

const REGISTRY = {
  type: 'object',
  additionalProperties: false,
  required: ['providers', 'refusals'],
  properties: {
    providers: { type: 'array', items: PROVIDER },
    refusals: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['packName', 'providerId', 'code'],
        properties: {
          packName: { type: 'string' },
          providerId: { type: 'string' },
          code: { type: 'string', enum: ['connection_provider_conflict', 'connection_provider_unresolved'] },
          heldBy: { type: 'string', description: 'For a conflict: the pack holding the id, or builtin.' },
        },
      },
    },
  },
};

/**
 * The connection-provider registry read (RFC 0233's listConnectionProviders / resolveConnectionProvider; the
 * operationIds differ because v1's provider reads use those names; `connections.providerRead` in the v2 record):
 * unversioned paths, as the v2 scenarios and RFC 0233 name them (they are not manifest operations).
 */
@ApiTags('connections')
@Controller()
export class ProviderRegistryController {
  constructor(private readonly registry: ProviderRegistryService) {}

  @Scopes('connections:read')
  @Get('/connection-providers')
  @ApiOperation({
    operationId: 'listConnectionProviderRegistry',
    summary: 'The provider definitions connections resolve against, and refused pack registrations (RFC 0233)',
    description:
      'Every provider id the caller\'s connections resolve against (built-ins and the packs its tenant installed), each bare id once, and the pack registrations this process refused (connection_provider_conflict, naming the holder). Ids, pack names and codes only.',
  })
  @ApiOkResponse({ schema: REGISTRY })
  @ApiErrors(401, 403)
  list(@CurrentPrincipal() p: Principal): Promise<{ providers: RegistryProvider[]; refusals: RegistryRefusal[] }> {
    return this.registry.list(p);
  }

  @Scopes('connections:read')
  @Get('/connection-providers/:providerId')
  @ApiOperation({
    operationId: 'getConnectionProviderDefinition',
    summary: 'The definition one provider id resolves to (RFC 0233)',
    description: 'A bare id resolves to its one definition; with `pack`, only to that pack\'s (the qualified form `<pack>#<id>`). 404 connection_provider_unresolved otherwise.',
  })
  @ApiParam({ name: 'providerId', description: 'A bare provider id.' })
  @ApiQuery({ name: 'pack', required: false, schema: { type: 'string' }, description: 'Resolve only against this installed pack.' })
  @ApiOkResponse({ schema: PROVIDER })
  @ApiErrors(400, 401, 403, 404)
  resolve(@CurrentPrincipal() p: Principal, @Param('providerId') providerId: string, @Query('pack') pack: unknown): Promise<RegistryProvider> {
    if (pack !== undefined && (typeof pack !== 'string' || pack === '')) throw new ValidationError('pack must be given once, non-empty.', { field: 'pack' });
    return this.registry.resolve(p, providerId, pack as string | undefined);
  }
}
