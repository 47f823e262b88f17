import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches, MaxLength } from '../../../platform/http/dto-validation';
import { NotFoundError } from '../../../platform/errors/domain-error';
import { CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import { Principal, requireTenantLevel } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { McpClientService } from './mcp-client.service';
import { MCP_CURRENT_REVISION } from './mcp-revision';
import type { McpToolPinState } from './mcp-tool-pin.entity';
import { McpToolPinsService, McpToolPinView } from './mcp-tool-pins.service';

const MANAGE_TOOLS_SCOPE = 'tools:manage';

const PIN_VIEW = {
  type: 'object',
  required: ['serverId', 'toolName', 'state', 'approvedDigest', 'observedDigest', 'firstSeenAt', 'changedAt', 'approvedAt', 'approvedBy'],
  properties: {
    serverId: { type: 'string' },
    toolName: { type: 'string' },
    state: { type: 'string', enum: ['approved', 'held'], description: '`held`: the server now serves another definition; the tool is out of the catalog and its calls are refused.' },
    approvedDigest: { type: 'string', description: 'sha256:<hex> of the JCS text of the approved {name, description, inputSchema, outputSchema}.' },
    observedDigest: { type: 'string', description: 'The digest of the definition the server serves now (what an approval must name).' },
    firstSeenAt: { type: 'string', format: 'date-time' },
    changedAt: { type: 'string', format: 'date-time', nullable: true },
    approvedAt: { type: 'string', format: 'date-time', nullable: true },
    approvedBy: { type: 'string', nullable: true },
  },
};

const SERVER_VIEW = {
  type: 'object',
  required: ['serverId', 'transport', 'downgrade', 'requestedVersion', 'heldTools'],
  properties: {
    serverId: { type: 'string' },
    transport: { type: 'string', enum: ['stdio', 'http'] },
    downgrade: { type: 'string', enum: ['allow', 'forbid'], description: 'Whether the 2025-06-18 handshake may be used when the server does not speak the current revision.' },
    requestedVersion: { type: 'string', description: 'The revision the host asks for first.' },
    negotiatedVersion: { type: 'string', description: 'The revision the host last settled with the server (absent before the first exchange or after a refusal).' },
    era: { type: 'string', enum: ['modern', 'legacy'] },
    downgraded: { type: 'boolean', description: 'The legacy revision was selected because the server does not speak the current one.' },
    negotiatedAt: { type: 'string', format: 'date-time' },
    refused: { type: 'object', properties: { reason: { type: 'string' }, requested: { type: 'string' } }, description: 'The last negotiation failed closed.' },
    heldTools: { type: 'integer', minimum: 0 },
  },
};

class PinQuery {
  @ApiPropertyOptional({ enum: ['approved', 'held'] })
  @IsOptional()
  @IsIn(['approved', 'held'])
  state?: McpToolPinState;

  @ApiPropertyOptional({ description: 'Only the pins of this server.' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  serverId?: string;
}

class ApprovePinBody {
  @ApiProperty({ description: 'The `observedDigest` of the held definition that was reviewed.', example: 'sha256:4f…' })
  @IsString()
  @Matches(/^sha256:[0-9a-f]{64}$/)
  digest: string;
}

/**
 * The operator's view of the MCP servers the tenant uses (the revision the host negotiated, the
 * downgrade policy) and of the pinned tool definitions, with the approval of a held definition.
 */
@ApiTags('tools')
@Controller()
export class McpAdminController {
  constructor(
    private readonly mcp: McpClientService,
    private readonly pins: McpToolPinsService,
  ) {}

  @Scopes(MANAGE_TOOLS_SCOPE)
  @Get('/v1/mcp/servers')
  @ApiOperation({ operationId: 'listMcpServers', summary: 'List the MCP servers of the tenant with their negotiated revision' })
  @ApiOkResponse({ schema: { type: 'object', required: ['servers'], properties: { servers: { type: 'array', items: SERVER_VIEW } } } })
  @ApiErrors(401, 403)
  async servers(@CurrentPrincipal() p: Principal): Promise<{ servers: Array<Record<string, unknown>> }> {
    requireTenantLevel(p, 'MCP servers and pinned tool definitions');
    const held = await this.pins.list(p.tenant, { state: 'held' });
    return {
      servers: this.mcp.servers(p.tenant).map((cfg) => {
        const s = this.mcp.state(cfg.id);
        return {
          serverId: cfg.id,
          transport: cfg.transport,
          downgrade: cfg.downgrade,
          requestedVersion: s?.requested ?? MCP_CURRENT_REVISION,
          ...(s?.revision ? { negotiatedVersion: s.revision, era: s.era, downgraded: s.downgraded === true, negotiatedAt: s.at } : {}),
          ...(s?.refused ? { refused: s.refused } : {}),
          heldTools: held.filter((h) => h.serverId === cfg.id).length,
        };
      }),
    };
  }

  @Scopes(MANAGE_TOOLS_SCOPE)
  @Get('/v1/mcp/tool-pins')
  @ApiOperation({ operationId: 'listMcpToolPins', summary: 'List the pinned MCP tool definitions of the tenant (held ones need an approval)' })
  @ApiOkResponse({ schema: { type: 'object', required: ['pins'], properties: { pins: { type: 'array', items: PIN_VIEW } } } })
  @ApiErrors(400, 401, 403)
  async list(@CurrentPrincipal() p: Principal, @Query() q: PinQuery): Promise<{ pins: McpToolPinView[] }> {
    requireTenantLevel(p, 'MCP servers and pinned tool definitions');
    return { pins: await this.pins.list(p.tenant, { state: q.state, serverId: q.serverId }) };
  }

  @Scopes(MANAGE_TOOLS_SCOPE)
  @Post('/v1/mcp/tool-pins/:serverId/:toolName/approve')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'approveMcpToolPin',
    summary: 'Approve the definition a held MCP tool now has',
    description: 'The tool returns to the catalog and may be called again. 409 mcp_tool_definition_changed when the server serves another definition than `digest` by now.',
  })
  @ApiParam({ name: 'serverId' })
  @ApiParam({ name: 'toolName' })
  @ApiBody({ type: ApprovePinBody })
  @ApiOkResponse({ schema: PIN_VIEW })
  @ApiErrors(400, 401, 403, 404, 409)
  async approve(@CurrentPrincipal() p: Principal, @Param('serverId') serverId: string, @Param('toolName') toolName: string, @Body() body: ApprovePinBody): Promise<McpToolPinView> {
    requireTenantLevel(p, 'MCP servers and pinned tool definitions');
    if (!this.mcp.server(serverId, p.tenant)) throw new NotFoundError('No pinned MCP tool has this server and name.');
    return this.pins.approve(p, serverId, toolName, body.digest);
  }
}
