import { Controller, Get, Param, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { NotFoundError } from '../../platform/errors/domain-error';
import { CurrentPrincipal, Scopes } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { ApiErrors } from '../../platform/openapi/api-errors.decorator';
import { RunArtifactsService, StoredArtifact } from './artifacts/run-artifacts.service';
import { RunsService } from './runs.service';

/**
 * A run's artifact as the gRPC GetArtifact method answers it: the run is looked up first, so an
 * unknown or foreign run is its 404. The gRPC transport does not serve artifact bytes yet, so any
 * artifact id is 404 there (the REST route below serves them).
 */
/** The bytes of one artifact of a run the principal may see; 404 for an unknown or foreign run or artifact. */
export async function runArtifactBytes(runs: RunsService, artifacts: RunArtifactsService, p: Principal, runId: string, artifactId: string): Promise<StoredArtifact> {
  await runs.state(p, runId); // unknown and foreign runs (other tenant or workspace): 404
  const found = await artifacts.read(p.tenant, runId, artifactId);
  if (!found) throw new NotFoundError('No such artifact.', { artifactId });
  return found;
}

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
  constructor(
    private readonly runs: RunsService,
    private readonly artifacts: RunArtifactsService,
  ) {}

  @Scopes('artifacts:read')
  @Get('/v1/runs/:runId/artifacts/:artifactId')
  @ApiOperation({ operationId: 'getArtifact', summary: 'Read a run-produced artifact (its bytes, with the media type the node gave)' })
  @ApiParam({ name: 'runId' })
  @ApiParam({ name: 'artifactId' })
  @ApiOkResponse({ schema: { type: 'object', additionalProperties: true, description: 'Implementation-defined artifact shape: this host answers the stored bytes with the Content-Type the producing node declared (application/json for a JSON artifact), their Content-Length, and Content-Disposition: attachment.' } })
  @ApiErrors(401, 403, 404)
  async get(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Param('artifactId') artifactId: string, @Res({ passthrough: true }) reply: FastifyReply): Promise<Buffer> {
    const a = await runArtifactBytes(this.runs, this.artifacts, p, runId, artifactId);
    reply.header('content-type', a.ref.contentType);
    reply.header('content-length', String(a.data.byteLength));
    reply.header('content-disposition', `attachment; filename*=UTF-8''${encodeURIComponent(a.ref.name)}`);
    reply.header('x-content-type-options', 'nosniff');
    return a.data;
  }
}
