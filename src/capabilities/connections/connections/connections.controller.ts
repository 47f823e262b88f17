import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { pageSchema, PageQuery } from '../../../platform/pagination/page-query';
import { CreateConnectionBody, RotateCredentialBody } from '../connections.dto';
import { CONNECTION_VIEW } from '../connections.openapi';
import { ConnectionsService, ConnectionView } from './connections.service';

const ID_PARAM = { name: 'id', description: 'Connection id (uuid).' };

/** Tenant connections: a provider plus a write-only credential (RFC 0046). */
@ApiTags('connections')
@Controller()
export class ConnectionsController {
  constructor(private readonly connections: ConnectionsService) {}

  @Scopes('connections:manage')
  @Post('/v1/connections')
  @ApiOperation({
    operationId: 'createConnection',
    summary: 'Create a connection (provider + credential); the credential is stored encrypted and never returned',
    description: '404 connection_provider_unresolved, 409 connection_provider_conflict or connection_exists, 503 credential_store_unavailable when no encryption key is configured.',
  })
  @ApiBody({ type: CreateConnectionBody })
  @ApiCreatedResponse({ schema: CONNECTION_VIEW })
  @ApiErrors(400, 401, 403, 404, 409, 503)
  create(@CurrentPrincipal() p: Principal, @Body() body: CreateConnectionBody): Promise<ConnectionView> {
    return this.connections.create(p, body);
  }

  @Scopes('connections:read')
  @Get('/v1/connections')
  @ApiOperation({ operationId: 'listConnections', summary: "List the tenant's connections (references only)" })
  @ApiOkResponse({ schema: pageSchema('connections', CONNECTION_VIEW) })
  @ApiErrors(400, 401, 403)
  async list(@CurrentPrincipal() p: Principal, @Query() q: PageQuery): Promise<{ connections: ConnectionView[]; nextCursor: string | null }> {
    const page = await this.connections.page(p, q);
    return { connections: page.items, nextCursor: page.nextCursor };
  }

  @Scopes('connections:read')
  @Get('/v1/connections/:id')
  @ApiOperation({ operationId: 'getConnection', summary: 'Read one connection (never its credential)' })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ schema: CONNECTION_VIEW })
  @ApiErrors(401, 403, 404)
  get(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<ConnectionView> {
    return this.connections.get(p, id);
  }

  @Scopes('connections:manage')
  @Delete('/v1/connections/:id')
  @HttpCode(204)
  @ApiOperation({ operationId: 'deleteConnection', summary: 'Delete a connection and its stored credential' })
  @ApiParam(ID_PARAM)
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiErrors(401, 403, 404)
  async delete(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<void> {
    await this.connections.delete(p, id);
  }

  @Scopes('connections:manage')
  @Put('/v1/connections/:id/credential')
  @ApiOperation({ operationId: 'rotateConnectionCredential', summary: 'Rotate (or bind) the credential of a connection; write-only, the reference stays the same; the replaced one is still offered for overlapSeconds (two-key overlap)' })
  @ApiParam(ID_PARAM)
  @ApiBody({ type: RotateCredentialBody })
  @ApiOkResponse({ schema: CONNECTION_VIEW })
  @ApiErrors(400, 401, 403, 404, 503)
  rotate(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Body() body: RotateCredentialBody): Promise<ConnectionView> {
    return this.connections.rotateCredential(p, id, body.credential, body.overlapSeconds);
  }

  @Scopes('connections:manage')
  @Delete('/v1/connections/:id/credential/previous')
  @ApiOperation({
    operationId: 'retirePreviousConnectionCredential',
    summary: 'End a two-key-overlap rotation now: the credential the last rotation replaced is deleted (RFC 0046 §D)',
    description: '404 not_found for an unknown connection, or one with no rotated-out credential in its overlap.',
  })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ schema: CONNECTION_VIEW })
  @ApiErrors(401, 403, 404)
  retirePrevious(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<ConnectionView> {
    return this.connections.retirePreviousCredential(p, id);
  }
}
