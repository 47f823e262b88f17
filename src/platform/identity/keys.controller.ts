import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsDateString, IsInt, IsOptional, IsString, Matches, MaxLength, Min } from '../http/dto-validation';
import { auditActor } from '../audit/audit-log.service';
import { ForbiddenError } from '../errors/domain-error';
import { ApiErrors } from '../openapi/api-errors.decorator';
import { pageSchema, PageQuery } from '../pagination/page-query';
import { ApiKeyService, ApiKeyView } from './api-key.service';
import { CurrentPrincipal, Scopes } from './decorators';
import { hasScopes, IDENTIFIER as IDENT, Principal } from './principal';
import { expandRoles } from './scopes';


class CreateKeyBody {
  @ApiProperty({ description: 'Principal id the key acts as (opaque, never PII).' })
  @IsString()
  @Matches(IDENT)
  principal: string;

  @ApiPropertyOptional({ description: 'Workspace the key is bound to; defaults to the caller’s.' })
  @IsOptional()
  @IsString()
  @Matches(IDENT)
  workspace?: string;

  @ApiPropertyOptional({ type: [String] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @MaxLength(200, { each: true })
  scopes?: string[];

  @ApiPropertyOptional({ type: [String], description: 'viewer, editor or admin' })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(10)
  @IsString({ each: true })
  roles?: string[];

  @ApiPropertyOptional({ format: 'date-time' })
  @IsOptional()
  @IsDateString()
  expiresAt?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(200)
  name?: string;
}

class RotateKeyBody {
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'Seconds the rotated key keeps working next to its successor; default and bounds: OPENWOP_KEY_ROTATION_OVERLAP_S, _MIN_OVERLAP_S, _MAX_OVERLAP_S (outside them: 400).' })
  @IsOptional()
  @IsInt()
  @Min(0)
  overlapSeconds?: number;

  @ApiPropertyOptional({ format: 'date-time', description: 'Expiry of the successor; by default the rotated key’s own expiry.' })
  @IsOptional()
  @IsDateString()
  expiresAt?: string;
}

const KEY_VIEW = {
  type: 'object',
  required: ['id', 'tenant', 'principal', 'scopes', 'roles', 'prefix', 'createdAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    tenant: { type: 'string' },
    workspace: { type: 'string' },
    principal: { type: 'string' },
    name: { type: 'string' },
    scopes: { type: 'array', items: { type: 'string' } },
    roles: { type: 'array', items: { type: 'string' } },
    prefix: { type: 'string' },
    expiresAt: { type: 'string', format: 'date-time' },
    revokedAt: { type: 'string', format: 'date-time' },
    createdAt: { type: 'string', format: 'date-time' },
    rotatedAt: { type: 'string', format: 'date-time' },
    rotatedTo: { type: 'string', format: 'uuid' },
    rotatedFrom: { type: 'string', format: 'uuid' },
  },
};

/** API keys of the caller's own tenant. A key can only mint keys with scopes it holds itself. */
@ApiTags('keys')
@Controller()
export class KeysController {
  constructor(private readonly keys: ApiKeyService) {}

  @Scopes('keys:manage')
  @Post('/v1/keys')
  @ApiOperation({ operationId: 'createApiKey', summary: 'Mint an API key for the caller’s tenant (shown once)' })
  @ApiBody({ type: CreateKeyBody })
  @ApiCreatedResponse({ schema: { type: 'object', required: ['key', 'apiKey'], properties: { key: { type: 'string' }, apiKey: KEY_VIEW } } })
  @ApiErrors(400, 401, 403)
  async create(@CurrentPrincipal() p: Principal, @Body() body: CreateKeyBody): Promise<{ key: string; apiKey: ApiKeyView }> {
    // A workspace-bound caller mints keys for its own workspace only.
    if (p.workspace && body.workspace !== undefined && body.workspace !== p.workspace) {
      throw new ForbiddenError('A workspace-bound key cannot mint keys for another workspace.');
    }
    const wanted = [...(body.scopes ?? []), ...expandRoles(body.roles ?? [])];
    if (!hasScopes(p, wanted)) {
      throw new ForbiddenError('A key cannot grant scopes its creator does not hold.', { requiredScopes: wanted.filter((s) => !p.scopes.has(s)) });
    }
    const { key, view } = await this.keys.create({
      tenant: p.tenant,
      workspace: body.workspace ?? p.workspace,
      principal: body.principal,
      scopes: body.scopes,
      roles: body.roles,
      expiresAt: body.expiresAt ? new Date(body.expiresAt) : undefined,
      name: body.name,
    }, auditActor(p));
    return { key, apiKey: view };
  }

  @Scopes('keys:manage')
  @Get('/v1/keys')
  @ApiOperation({ operationId: 'listApiKeys', summary: 'List the API keys of the caller’s tenant, or of its workspace for a workspace-bound caller (never their secrets)' })
  @ApiOkResponse({ schema: pageSchema('keys', KEY_VIEW) })
  @ApiErrors(400, 401, 403)
  async list(@CurrentPrincipal() p: Principal, @Query() q: PageQuery): Promise<{ keys: ApiKeyView[]; nextCursor: string | null }> {
    const page = await this.keys.page(p, q, { list: 'keys', tenant: p.tenant, workspace: p.workspace });
    return { keys: page.items, nextCursor: page.nextCursor };
  }

  @Scopes('keys:manage')
  @Delete('/v1/keys/:id')
  @ApiOperation({ operationId: 'revokeApiKey', summary: 'Revoke an API key of the caller’s tenant (of its workspace for a workspace-bound caller)' })
  @ApiOkResponse({ schema: KEY_VIEW })
  @ApiErrors(401, 403, 404)
  async revoke(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<ApiKeyView> {
    // A workspace-bound caller revokes keys of its own workspace only: others are 404 like unknown ids.
    return this.keys.revoke(id, { tenant: p.tenant, workspace: p.workspace }, auditActor(p));
  }

  @Scopes('keys:manage')
  @Post('/v1/keys/:id/rotate')
  @HttpCode(201)
  @ApiOperation({
    operationId: 'rotateApiKey',
    summary: 'Rotate an API key: mint its successor (shown once) and keep the old key working for the overlap only (openwop-auth-api-key-rotation)',
  })
  @ApiBody({ type: RotateKeyBody, required: false })
  @ApiCreatedResponse({
    schema: {
      type: 'object',
      required: ['key', 'apiKey', 'previous', 'overlapEndsAt'],
      properties: { key: { type: 'string' }, apiKey: KEY_VIEW, previous: KEY_VIEW, overlapEndsAt: { type: 'string', format: 'date-time' } },
    },
  })
  @ApiErrors(400, 401, 403, 404, 409)
  async rotate(
    @CurrentPrincipal() p: Principal,
    @Param('id') id: string,
    @Body() body: RotateKeyBody = {},
  ): Promise<{ key: string; apiKey: ApiKeyView; previous: ApiKeyView; overlapEndsAt: string }> {
    const { key, view, previous } = await this.keys.rotate(id, { tenant: p.tenant, workspace: p.workspace }, {
      overlapSeconds: body?.overlapSeconds,
      expiresAt: body?.expiresAt ? new Date(body.expiresAt) : undefined,
      // Like minting: the successor grants exactly the old key's scopes, which the caller must hold.
      authorize: (k) => {
        const wanted = [...k.scopes, ...expandRoles(k.roles)];
        if (!hasScopes(p, wanted)) {
          throw new ForbiddenError('A key cannot rotate a key granting scopes it does not hold.', { requiredScopes: wanted.filter((s) => !p.scopes.has(s)) });
        }
      },
    }, auditActor(p));
    return { key, apiKey: view, previous, overlapEndsAt: previous.expiresAt! };
  }
}
