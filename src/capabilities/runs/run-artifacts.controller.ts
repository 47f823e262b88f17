import { Controller, Get, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { NotFoundError } from '../../platform/errors/domain-error';
import { CurrentPrincipal, Scopes } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { ApiErrors } from '../../platform/openapi/api-errors.decorator';
import { RunsService } from './runs.service';

/**
 * A run's artifact (the answer of the REST route and of gRPC GetArtifact): the run is looked up
 * first, so an unknown or foreign run is its 404; no executor produces artifacts yet, so any
 * artifact id of a visible run is 404 too.
 */
export async function readRunArtifact(runs: RunsService, p: Principal, runId: string, artifactId: string): Promise<Record<string, unknown>> {
  await runs.get(p, runId); // unknown and foreign runs: 404
  throw new NotFoundError('No such artifact.', { artifactId });
}

/**
 * `GET /v1/runs/{runId}/artifacts/{artifactId}`. No node executor of this host produces run
 * artifacts yet, so every artifact id is unknown: a run of the caller's tenant answers 404 for it,
 * exactly as an unknown or foreign run does. The route exists so that authentication and scopes
 * are enforced first (no credential: 401, never 404).
 */
@ApiTags('artifacts')
@Controller()
export class RunArtifactsController {
  constructor(private readonly runs: RunsService) {}

  @Scopes('artifacts:read')
  @Get('/v1/runs/:runId/artifacts/:artifactId')
  @ApiOperation({ operationId: 'getArtifact', summary: 'Read a run-produced artifact (no executor produces artifacts yet: 404)' })
  @ApiParam({ name: 'runId' })
  @ApiParam({ name: 'artifactId' })
  @ApiOkResponse({ schema: { type: 'object', additionalProperties: true, description: 'Implementation-defined artifact shape.' } })
  @ApiErrors(401, 403, 404)
  get(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Param('artifactId') artifactId: string): Promise<Record<string, unknown>> {
    return readRunArtifact(this.runs, p, runId, artifactId);
  }
}
