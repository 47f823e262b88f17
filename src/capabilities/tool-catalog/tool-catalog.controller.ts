import { Controller, Get, Headers, Param, Query, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import { TOOL_SOURCE_KINDS, ToolDescriptor } from '@openwop-host/plugin-sdk';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requestMajor } from '../../platform/http/protocol-version';
import { CurrentPrincipal, Scopes } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { ApiErrors } from '../../platform/openapi/api-errors.decorator';
import { protocolSchemaRef } from '../../platform/openapi/protocol-schemas';
import { parseCatalogSource as parseSource, parseCatalogView as parseView } from './catalog-query';
import type { CompactToolDescriptor } from './compact-descriptor';
import { CatalogView, ToolCatalogService } from './tool-catalog.service';
import { toV2Descriptor } from './v2-descriptor';

/**
 * The protocol's `view` parameter (RFC 0112). It changes the shape of the answer, so the document
 * gives each shape an operation of its own: these routes are documented with their standard view,
 * and the compact view has its own paths (`/v1/compact-tools`) that answer exactly the bytes of
 * `?view=compact`. Typed clients use those; protocol clients may still send `view=compact` here.
 */
const VIEW_QUERY = {
  name: 'view',
  required: false,
  schema: { type: 'string', enum: ['standard'], default: 'standard' },
  description:
    'The standard view. On the wire the protocol\'s `view=compact` (RFC 0112) is also answered here, in the compact shape; a typed client reads that shape from the compact-tools operations instead. Any other value is the standard view.',
} as const;

const SOURCE_QUERY = { name: 'source', required: false, schema: { type: 'string', enum: [...TOOL_SOURCE_KINDS] }, description: 'Only tools of this source.' } as const;

const LIST_DESCRIPTION =
  'Every tool of the caller\'s tenant whose `auth.scopes` the caller holds, from every source, sorted by toolId (code-unit order).';

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
    description: `${LIST_DESCRIPTION} The protocol's bare array of ToolDescriptor (the compact view: listCompactTools).`,
  })
  @ApiQuery(VIEW_QUERY)
  @ApiQuery(SOURCE_QUERY)
  @ApiOkResponse({ description: 'The caller\'s catalog, standard view.', schema: { type: 'array', items: protocolSchemaRef('ToolDescriptor') } })
  @ApiResponse({ status: 304, description: 'Not modified: the If-None-Match ETag still matches.' })
  @ApiErrors(400, 401, 403)
  async list(
    @CurrentPrincipal() p: Principal,
    @Query('view') view: unknown,
    @Query('source') source: unknown,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Buffer | undefined> {
    return this.sendList(p, parseView(view), source, ifNoneMatch, reply, requestMajor(req));
  }

  @Scopes('tools:read')
  @Get('/v1/compact-tools')
  @ApiOperation({
    operationId: 'listCompactTools',
    summary: 'List the tools the caller may invoke, compact view (RFC 0112)',
    description: `${LIST_DESCRIPTION} The same answer as \`GET /v1/tools?view=compact\`: \`{tools: CompactToolDescriptor[]}\` with the same toolId set as the standard view (heavy fields omitted, inputSchema bounded to the compact subset).`,
  })
  @ApiQuery(SOURCE_QUERY)
  @ApiOkResponse({
    description: 'The caller\'s catalog, compact view.',
    schema: { type: 'object', required: ['tools'], additionalProperties: false, properties: { tools: { type: 'array', items: protocolSchemaRef('CompactToolDescriptor') } } },
  })
  @ApiResponse({ status: 304, description: 'Not modified: the If-None-Match ETag still matches.' })
  @ApiErrors(400, 401, 403)
  async listCompact(
    @CurrentPrincipal() p: Principal,
    @Query('source') source: unknown,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Buffer | undefined> {
    return this.sendList(p, 'compact', source, ifNoneMatch, reply, 1);
  }

  @Scopes('tools:read')
  @Get('/v1/tools/:toolId')
  @ApiOperation({
    operationId: 'getTool',
    summary: 'Read one tool',
    description: 'One descriptor of the caller\'s catalog (URL-encode the id: `mcp%3Afs.read`). An unknown id and a tool the caller may not see are the same 404. The compact view: getCompactTool.',
  })
  @ApiParam({ name: 'toolId', description: 'The toolId, URL-encoded.' })
  @ApiQuery(VIEW_QUERY)
  @ApiOkResponse({ description: 'The tool, standard view.', schema: protocolSchemaRef('ToolDescriptor') })
  @ApiErrors(400, 401, 403, 404)
  async get(@CurrentPrincipal() p: Principal, @Param('toolId') toolId: string, @Query('view') view: unknown, @Req() req: FastifyRequest): Promise<ToolDescriptor | CompactToolDescriptor> {
    if (parseView(view) === 'compact') return this.catalog.getCompact(p, toolId);
    const d = await this.catalog.get(p, toolId);
    // Major 2 (GET /tools/{toolId}): the v2 descriptor, with RFC 0204 annotations derived from the host-assigned fields.
    return requestMajor(req) >= 2 ? toV2Descriptor(d) : d;
  }

  @Scopes('tools:read')
  @Get('/v1/compact-tools/:toolId')
  @ApiOperation({
    operationId: 'getCompactTool',
    summary: 'Read one tool, compact view (RFC 0112)',
    description: 'The same answer as `GET /v1/tools/{toolId}?view=compact`: one CompactToolDescriptor. An unknown id and a tool the caller may not see are the same 404.',
  })
  @ApiParam({ name: 'toolId', description: 'The toolId, URL-encoded.' })
  @ApiOkResponse({ description: 'The tool, compact view.', schema: protocolSchemaRef('CompactToolDescriptor') })
  @ApiErrors(400, 401, 403, 404)
  async getCompact(@CurrentPrincipal() p: Principal, @Param('toolId') toolId: string): Promise<CompactToolDescriptor> {
    return this.catalog.getCompact(p, toolId);
  }

  private async sendList(p: Principal, view: CatalogView, source: unknown, ifNoneMatch: string | undefined, reply: FastifyReply, major: number): Promise<Buffer | undefined> {
    const { body, etag } = await this.catalog.listJson(p, { view, source: parseSource(source), major });
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
}
