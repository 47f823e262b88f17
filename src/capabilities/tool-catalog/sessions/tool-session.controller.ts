import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsObject, IsOptional, IsString, MaxLength, MinLength } from '../../../platform/http/dto-validation';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { ToolSessionService } from './tool-session.service';

class SessionRunBody {
  @ApiPropertyOptional({ description: 'A tool of the caller\'s catalog; default: the first tool the host can run with sample arguments.' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(512)
  toolId?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Arguments of each call (default: the source\'s sample arguments, else {}).' })
  @IsOptional()
  @IsObject()
  arguments?: Record<string, unknown>;
}

class SessionRunResponse {
  @ApiProperty({ format: 'uuid' }) runId: string;
  @ApiProperty() sessionId: string;
  @ApiProperty() toolId: string;
}

@ApiTags('test-seams')
@Controller()
export class ToolSessionController {
  constructor(private readonly sessions: ToolSessionService) {}

  /**
   * Conformance seam (RFC 0078 §D): runs a tool session as a real one-node `core.tool` run and
   * answers only once the run is terminal, its whole event bracket persisted in the run's event log.
   */
  @TestSeam()
  @Scopes('tools:read', 'runs:create')
  @Post('/v1/host/sample/tools/session-run')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamRunToolSession', summary: 'Test seam: run a tool session and persist its events' })
  @ApiBody({ type: SessionRunBody, required: false })
  @ApiOkResponse({ type: SessionRunResponse })
  @ApiErrors(400, 401, 403, 404, 422)
  async run(@CurrentPrincipal() p: Principal, @Body() body: SessionRunBody): Promise<SessionRunResponse> {
    const r = await this.sessions.run(p, { toolId: body?.toolId, arguments: body?.arguments });
    return { runId: r.runId, sessionId: r.sessionId, toolId: r.toolId };
  }
}
