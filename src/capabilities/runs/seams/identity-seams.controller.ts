import { Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { DomainError, NotFoundError } from '../../../platform/errors/domain-error';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { protocolSchemaRef } from '../../../platform/openapi/protocol-schemas';
import { RunCreationService } from '../run-creation.service';
import type { RunSnapshot } from '../run-snapshot';
import { RunsService } from '../runs.service';

/**
 * The RFC 0048 identity seams (host-sample-test-seams.md, `cross-workspace-isolation`), acting only
 * as the caller, in the caller's tenant, with no more than the caller's scopes:
 * - `owned-run`: a run the caller starts (the `conformance-noop` fixture) read back through the
 *   same read as `GET /v1/runs/{runId}`: its `owner` triple is the caller's.
 * - `cross-workspace-read`: the caller starts a run in one workspace (its own, or the sandbox
 *   workspace `seam-workspace-a` for a tenant-level caller) and reads it as the same principal bound
 *   to another workspace (`seam-workspace-b`, or `<own>.seam-b`), through the real read, which
 *   answers `404 not_found` (a foreign run looks unknown): the seam then answers `403 run_forbidden`
 *   with that answer in `details.hostAnswer` (its own 404 would read as "seam not served"); any other
 *   refusal passes through, and were the read to leak, the seam would answer the run with 200.
 */
@ApiTags('runs')
@Controller()
export class IdentitySeamsController {
  constructor(
    private readonly creation: RunCreationService,
    private readonly runs: RunsService,
  ) {}

  @TestSeam()
  @Scopes('runs:create', 'runs:read')
  @Get('/v1/host/sample/identity/owned-run')
  @ApiOperation({ operationId: 'seamIdentityOwnedRun', summary: '(test seam) A run the caller starts, read back: its snapshot with the owner triple' })
  @ApiOkResponse({ schema: protocolSchemaRef('RunSnapshot') })
  @ApiErrors(401, 403)
  async ownedRun(@CurrentPrincipal() p: Principal): Promise<RunSnapshot> {
    const { snapshot } = await this.creation.create(p, { workflowId: 'conformance-noop', inputs: {} });
    return this.runs.get(p, snapshot.runId);
  }

  @TestSeam()
  @Scopes('runs:create', 'runs:read')
  @Post('/v1/host/sample/identity/cross-workspace-read')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamIdentityCrossWorkspaceRead', summary: '(test seam) A principal of one workspace reads a run of another workspace of its tenant: 403 run_forbidden when the real read refused it (it answered 404 not_found)' })
  @ApiOkResponse({ description: 'Never expected: the other workspace\'s run, had the read leaked it.', schema: protocolSchemaRef('RunSnapshot') })
  @ApiErrors(401, 403)
  async crossWorkspaceRead(@CurrentPrincipal() p: Principal): Promise<RunSnapshot> {
    const a: Principal = { ...p, workspace: p.workspace ?? 'seam-workspace-a' };
    const b: Principal = { ...p, workspace: p.workspace ? `${p.workspace}.seam-b` : 'seam-workspace-b' };
    const { snapshot } = await this.creation.create(a, { workflowId: 'conformance-noop', inputs: {} });
    try {
      return await this.runs.get(b, snapshot.runId);
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e;
      // The real read refused it as unknown; the seam, which knows the run exists, names the refusal
      // (a seam's 404 would read as "seam not served" to the suite).
      throw new DomainError('run_forbidden', 403, 'The cross-workspace read was refused: GET /v1/runs/{runId} answered this principal 404 not_found, as for an unknown run.', { hostAnswer: { status: 404, error: 'not_found' } });
    }
  }
}
