import { Controller, Get, Param, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { RunArtifactReader } from '../artifacts/run-artifact-reader.service';

/**
 * `GET /v1/runs/{runId}/artifacts/{artifactId}`: the bytes a node stored (`ctx.artifacts.put`,
 * `core.artifact`), with their media type and length. Authentication and scopes come first (no
 * credential: 401; without `artifacts:read`: 403); an unknown artifact, or one of a run the caller
 * cannot see, is 404 exactly like an unknown run. Served as an attachment with `nosniff`, so
 * content a node wrote is never rendered as a page of the host's origin.
 */
@ApiTags('artifacts')
@Controller()
export class RunArtifactsController {
  constructor(private readonly artifacts: RunArtifactReader) {}

  @Scopes('artifacts:read')
  @Get('/v1/runs/:runId/artifacts/:artifactId')
  @ApiOperation({ operationId: 'getArtifact', summary: 'Read a run-produced artifact (its bytes, with the media type the node gave)' })
  @ApiParam({ name: 'runId' })
  @ApiParam({ name: 'artifactId' })
  @ApiOkResponse({ schema: { type: 'object', additionalProperties: true, description: 'Implementation-defined artifact shape: this host answers the stored bytes with the Content-Type the producing node declared (application/json for a JSON artifact), their Content-Length, and Content-Disposition: attachment.' } })
  @ApiErrors(401, 403, 404)
  async get(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Param('artifactId') artifactId: string, @Res({ passthrough: true }) reply: FastifyReply): Promise<Buffer> {
    const a = await this.artifacts.read(p, runId, artifactId);
    reply.header('content-type', a.ref.contentType);
    reply.header('content-length', String(a.data.byteLength));
    reply.header('content-disposition', `attachment; filename*=UTF-8''${encodeURIComponent(a.ref.name)}`);
    reply.header('x-content-type-options', 'nosniff');
    return a.data;
  }
}
