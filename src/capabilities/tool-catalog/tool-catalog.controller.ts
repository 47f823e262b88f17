import { Controller, Get, Headers, Param, Query, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import { TOOL_SOURCE_KINDS, ToolDescriptor, ToolSourceKind } from '@openwop-host/plugin-sdk';
import type { FastifyReply } from 'fastify';
import { ValidationError } from '../../platform/errors/domain-error';
import { CurrentPrincipal, Scopes } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { ApiErrors } from '../../platform/openapi/api-errors.decorator';
import { protocolSchemaRef } from '../../platform/openapi/protocol-schemas';
import type { CompactToolDescriptor } from './compact-descriptor';
import { CatalogView, ToolCatalogService } from './tool-catalog.service';

/** Any `view` other than `compact` is the standard view (RFC 0112), so it is not validated as an enum. */
function parseView(view: unknown): CatalogView {
  if (view === undefined) return 'standard';
  if (typeof view !== 'string') throw new ValidationError('view must be given once.', { field: 'view' });
  return view === 'compact' ? 'compact' : 'standard';
}

function parseSource(source: unknown): ToolSourceKind | undefined {
  if (source === undefined) return undefined;
  if (typeof source !== 'string' || !TOOL_SOURCE_KINDS.includes(source as ToolSourceKind)) {
    throw new ValidationError(`source must be one of ${TOOL_SOURCE_KINDS.join(', ')}.`, { field: 'source', allowed: TOOL_SOURCE_KINDS });
  }
  return source as ToolSourceKind;
}

const VIEW_QUERY = {
  name: 'view',
  required: false,
  schema: { type: 'string', enum: ['standard', 'compact'] },
  description: '`compact` returns RFC 0112 compact descriptors; any other value is the standard view.',
} as const;

/**
 * The tool catalog (RFC 0078): read-only, authorization-scoped. Query values are parsed by hand
 * rather than through a DTO: the list is the host's hottest read and `view` is deliberately lenient.
 */
@ApiTags('tools')
@Controller()
export class ToolCatalogController {
  constructor(private readonly catalog: ToolCatalogService) {}

  @Scopes('tools:read')
  @Get('/v1/tools')
  @ApiOperation({
    operationId: 'listTools',
    summary: 'List the tools the caller may invoke',
    description:
      'Every tool of the caller\'s tenant whose `auth.scopes` the caller holds, from every source, sorted by toolId (code-unit order). Standard view: a bare array of ToolDescriptor. `?view=compact`: `{tools: CompactToolDescriptor[]}` with the same toolId set.',
  })
  @ApiQuery(VIEW_QUERY)
  @ApiQuery({ name: 'source', required: false, schema: { type: 'string', enum: [...TOOL_SOURCE_KINDS] }, description: 'Only tools of this source.' })
  @ApiOkResponse({
    schema: {
      oneOf: [
        { type: 'array', items: protocolSchemaRef('ToolDescriptor') },
        { type: 'object', required: ['tools'], additionalProperties: false, properties: { tools: { type: 'array', items: protocolSchemaRef('CompactToolDescriptor') } } },
      ],
    },
  })
  @ApiResponse({ status: 304, description: 'Not modified: the If-None-Match ETag still matches.' })
  @ApiErrors(400, 401, 403)
  async list(
    @CurrentPrincipal() p: Principal,
    @Query('view') view: unknown,
    @Query('source') source: unknown,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Buffer | undefined> {
    const { body, etag } = await this.catalog.listJson(p, { view: parseView(view), source: parseSource(source) });
    // The body is per principal: shared caches must not keep it.
    reply.header('cache-control', 'private, no-cache').header('etag', etag);
    if (ifNoneMatch && ifNoneMatch.split(',').some((t) => t.trim() === etag)) {
      reply.status(304);
      return undefined;
    }
    // Already serialized and encoded (cached per view): sent as-is.
    reply.type('application/json; charset=utf-8');
    return body;
  }

  @Scopes('tools:read')
  @Get('/v1/tools/:toolId')
  @ApiOperation({
    operationId: 'getTool',
    summary: 'Read one tool',
    description: 'One descriptor of the caller\'s catalog (URL-encode the id: `mcp%3Afs.read`). An unknown id and a tool the caller may not see are the same 404.',
  })
  @ApiParam({ name: 'toolId', description: 'The toolId, URL-encoded.' })
  @ApiQuery(VIEW_QUERY)
  @ApiOkResponse({ schema: { oneOf: [protocolSchemaRef('ToolDescriptor'), protocolSchemaRef('CompactToolDescriptor')] } })
  @ApiErrors(400, 401, 403, 404)
  async get(@CurrentPrincipal() p: Principal, @Param('toolId') toolId: string, @Query('view') view: unknown): Promise<ToolDescriptor | CompactToolDescriptor> {
    return parseView(view) === 'compact' ? this.catalog.getCompact(p, toolId) : this.catalog.get(p, toolId);
  }
}
