import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { IsString, MaxLength } from '../../../platform/http/dto-validation';
import { DataSource } from 'typeorm';
import { UnprocessableError } from '../../../platform/errors/domain-error';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { MCP_CONFORMANCE_SERVER } from '../mcp-fixtures';
import { EFFECT_SEAMS } from '../replay/effect-seams';
import { RunCreationService } from '../run-creation.service';
import { settledStatus } from './settled-status';

class FireSeamBody {
  @ApiProperty({ description: 'A seam of the effect-seam manifest (GET /v1/host/effect-seams).' })
  @IsString()
  @MaxLength(200)
  seam: string;
}

/**
 * The v2 seams profile's `fireEffectSeam` (RFC 0173 §C.2), at `POST /v1/host/sample/effect-seams/fire`
 * (`/conformance/seams/sample/effect-seams/fire` under major 2): starts a run in the caller's tenant
 * that drives one manifest row into the Layer-2 ledger for real, waits for it to finish and answers
 * `201 {runId}`. `mcp.tools-call` runs the `conformance-mcp-client` fixture calling `echo` on the
 * configured `conformance` MCP server through `ctx.mcp.callTool` (the ledger records the call). A
 * row whose effects are not recorded in the ledger (`tool.catalog-invoke`: a source's own calls) is
 * refused with 422 rather than faked.
 */
@ApiTags('test-seams')
@Controller()
export class EffectSeamFireController {
  constructor(
    private readonly creation: RunCreationService,
    private readonly ds: DataSource,
  ) {}

  @TestSeam()
  @Scopes('runs:create')
  @Post('/v1/host/sample/effect-seams/fire')
  @HttpCode(201)
  @ApiOperation({ operationId: 'seamFireEffectSeam', summary: '(test seam) Run one effect-seam manifest row inside a run, to completion: 201 {runId}' })
  @ApiBody({ type: FireSeamBody })
  @ApiCreatedResponse({ schema: { type: 'object', required: ['runId', 'status'], properties: { runId: { type: 'string' }, status: { type: 'string' } } } })
  @ApiErrors(400, 401, 403, 422)
  async fire(@CurrentPrincipal() p: Principal, @Body() body: FireSeamBody): Promise<{ runId: string; status: string }> {
    if (!EFFECT_SEAMS.some((s) => s.seam === body.seam)) throw new UnprocessableError('seam_unknown', `"${body.seam}" is not a row of the effect-seam manifest.`, { seam: body.seam });
    if (body.seam !== 'mcp.tools-call') throw new UnprocessableError('seam_not_fireable', `The ledger does not record the effects of "${body.seam}", so firing it would witness nothing.`, { seam: body.seam });
    const { snapshot } = await this.creation.create(p, {
      workflowId: 'conformance-mcp-client',
      inputs: { method: 'callTool', serverId: MCP_CONFORMANCE_SERVER, name: 'echo', arguments: { text: 'effect-seam' } },
    });
    const status = await settledStatus(this.ds.manager, p, snapshot.runId, snapshot.status);
    return { runId: snapshot.runId, status };
  }
}
