import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsObject, IsOptional, IsString, Matches, MaxLength, MinLength } from '../../../platform/http/dto-validation';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { McpInvokeResult, McpInvokeService } from './mcp-invoke.service';

class McpInvokeBody {
  @ApiProperty({ description: 'The URL of a configured MCP server (tools.mcpServers[].url) the caller\'s tenant uses.' })
  @IsString()
  @MinLength(1)
  @MaxLength(2048)
  serverUrl: string;

  @ApiPropertyOptional({ description: 'The MCP revision to request (date form); default the current one, with the server\'s downgrade policy.' })
  @IsOptional()
  @IsString()
  @Matches(/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/, { message: 'requestVersion must be an MCP revision date (YYYY-MM-DD)' })
  requestVersion?: string;

  @ApiPropertyOptional({ description: 'A tool to call (tools/call); without it the seam lists the server\'s tools.' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(512)
  tool?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  @IsOptional()
  @IsObject()
  arguments?: Record<string, unknown>;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Only `elicitation` is honoured, and only with an `elicitationAnswer`.' })
  @IsOptional()
  @IsObject()
  clientCapabilities?: Record<string, unknown>;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'The content the seam answers every elicitation of an input_required result with (action accept).' })
  @IsOptional()
  @IsObject()
  elicitationAnswer?: Record<string, unknown>;

  @ApiPropertyOptional({ enum: ['extension-asserts-authority'] })
  @IsOptional()
  @IsIn(['extension-asserts-authority'])
  scenario?: string;

  @ApiPropertyOptional({ description: 'false: the exchange counts as unauthenticated, so it is never downgraded.' })
  @IsOptional()
  @IsBoolean()
  authenticated?: boolean;
}

@ApiTags('test-seams')
@Controller()
export class McpInvokeController {
  constructor(private readonly invoke: McpInvokeService) {}

  /**
   * Conformance seam (host-sample-test-seams §23): drives the host's production MCP client against a
   * configured server, a `tools/call` with `tool` (MRTR answered with `elicitationAnswer`), else a
   * listing; answers the negotiated revision. A revision failure is 400 `interop_version_unsupported`.
   */
  @TestSeam()
  @Scopes('tools:read', 'runs:create')
  @Post('/v1/host/sample/mcp/invoke')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamMcpInvoke', summary: 'Test seam: drive the MCP client against a configured server' })
  @ApiBody({ type: McpInvokeBody })
  @ApiOkResponse({
    schema: {
      type: 'object',
      required: ['negotiatedVersion'],
      properties: {
        negotiatedVersion: { type: 'string' },
        mrtr: { type: 'object', properties: { inputRequiredSeen: { type: 'boolean' }, retried: { type: 'boolean' }, requestStateEchoed: { type: 'boolean' }, result: {} } },
        extensionAuthority: { type: 'object', properties: { scopesWidened: { type: 'boolean' }, approvalAdvanced: { type: 'boolean' } } },
      },
    },
  })
  @ApiErrors(400, 401, 403, 422)
  async run(@CurrentPrincipal() p: Principal, @Body() body: McpInvokeBody): Promise<McpInvokeResult> {
    return this.invoke.invoke(p, body);
  }
}
