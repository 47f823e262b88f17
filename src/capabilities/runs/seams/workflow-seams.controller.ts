import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsBoolean, IsObject, IsOptional, IsString, MaxLength, ValidateIf } from '../../../platform/http/dto-validation';
import { DataSource } from 'typeorm';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { NotFoundError, ValidationError } from '../../../platform/errors/domain-error';
import { findRun } from '../run-snapshot';
import { CapabilityToggles, TOGGLEABLE } from './capability-toggles';
import { attestationConfig, attestationOf, attestationProblems, mergesAfter } from '../executors/subrun-attestation';
import { DeferredExpandBody, DeferredExpandSeam } from './deferred-expand-seam';

class CapabilityToggleBody {
  @ApiPropertyOptional({ description: `The flag: one of ${TOGGLEABLE.join(', ')} (any name with value null is a no-op probe).` })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  name?: string;

  @ApiPropertyOptional({ type: 'boolean', nullable: true, description: 'true/false sets the flag; null clears it (the host default).' })
  @IsOptional()
  @ValidateIf((_o, v) => v !== null)
  @IsBoolean()
  value?: boolean | null;

  @ApiPropertyOptional({ description: 'true: clear every flag.' })
  @IsOptional()
  @IsBoolean()
  reset?: boolean;
}

class RunVariablesBody {
  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  @IsObject()
  variables: Record<string, unknown>;
}

class SubrunAttestBody {
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: "The child's harvested outputs." })
  @IsObject()
  childOutputs: Record<string, unknown>;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: '{checksum?, algorithm?: "sha256", requireApproval?}' })
  @IsOptional()
  @IsObject()
  outputAttestation?: Record<string, unknown>;

  @ApiPropertyOptional({ description: 'The approval decision when requireApproval: accept, edit-accept, reject (absent: no answer, fail closed).' })
  @IsOptional()
  @IsString()
  @MaxLength(32)
  approvalAction?: string;
}

const OVERLAY_SCHEMA = { type: 'object', required: ['overlay'], properties: { overlay: { type: 'object', additionalProperties: { type: 'boolean' } } } };

/**
 * Test seams of workflows (404 unless the test seams are on): the capability-toggle overlay
 * (`lib/host-toggle.ts`) and an operator's write of a run's variables
 * (`subworkflow-input-mapping` mid-run mutation: a parent's variable changed while its child runs), and the
 * RFC 0063 sub-run attestation (`subrun-*` scenarios) through the functions `core.subWorkflow` uses, and the RFC 0124
 * deferred-expand seam (deferred-expand-seam.ts).
 */
@ApiTags('test-seams')
@Controller()
export class WorkflowSeamsController {
  constructor(
    private readonly toggles: CapabilityToggles,
    private readonly ds: DataSource,
    private readonly deferred: DeferredExpandSeam,
  ) {}

  @TestSeam()
  @Scopes('runs:create')
  @Post('/v1/host/sample/chain/deferred-expand')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamDeferredExpand', summary: '(test seam) RFC 0124: deferred-parameter expansion of a chain, or a run (and fork) of a seam chain expanded so' })
  @ApiBody({ type: DeferredExpandBody })
  @ApiOkResponse({ schema: { type: 'object', additionalProperties: true } })
  @ApiErrors(400, 401, 403, 404, 422)
  async deferredExpand(@CurrentPrincipal() p: Principal, @Body() body: DeferredExpandBody): Promise<Record<string, unknown>> {
    return this.deferred.expand(p, body);
  }

  @TestSeam()
  @Scopes('runs:create')
  @Post('/v1/host/sample/test/capability-toggle')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamCapabilityToggle', summary: '(test seam) switch an advertised capability flag off or on, or reset them: {overlay}' })
  @ApiBody({ type: CapabilityToggleBody })
  @ApiOkResponse({ schema: OVERLAY_SCHEMA })
  @ApiErrors(400, 401, 403)
  toggle(@Body() body: CapabilityToggleBody): { overlay: Record<string, boolean> } {
    if (body.reset) this.toggles.reset();
    else {
      if (!body.name) throw new ValidationError('name (or reset: true) is required.', { field: 'name' });
      if (!this.toggles.set(body.name, body.value ?? null)) throw new ValidationError(`"${body.name}" cannot be toggled here.`, { field: 'name', toggleable: [...TOGGLEABLE] });
    }
    return { overlay: this.toggles.snapshot() };
  }

  @TestSeam()
  @Scopes('runs:create')
  @Post('/v1/host/sample/subrun/attest')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamSubrunAttest', summary: '(test seam) RFC 0063: the attestation and merge decision core.subWorkflow applies to a child\'s outputs: {attestation?, merged, mergedValues?}' })
  @ApiBody({ type: SubrunAttestBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['merged'], properties: { attestation: { type: 'object' }, merged: { type: 'boolean' }, mergedValues: { type: 'object' } } } })
  @ApiErrors(400, 401, 403)
  attest(@Body() body: SubrunAttestBody): { attestation?: { checksum: string; algorithm: 'sha256' }; merged: boolean; mergedValues?: Record<string, unknown> } {
    const problems = attestationProblems(body.outputAttestation);
    if (problems.length) throw new ValidationError(problems[0], { problems });
    const cfg = attestationConfig(body.outputAttestation);
    const merged = mergesAfter(cfg, body.approvalAction);
    return { ...(cfg?.checksum ? { attestation: attestationOf(body.childOutputs) } : {}), merged, ...(merged ? { mergedValues: body.childOutputs } : {}) };
  }

  @TestSeam()
  @Scopes('runs:create')
  @Post('/v1/host/sample/test/runs/:runId/variables')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamRunVariables', summary: '(test seam) write variables of a run of the caller\'s tenant (applied over its own writes): {runId, variables}' })
  @ApiBody({ type: RunVariablesBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['runId', 'variables'], properties: { runId: { type: 'string' }, variables: { type: 'object' } } } })
  @ApiErrors(400, 401, 403, 404)
  async variables(@CurrentPrincipal() p: Principal, @Param('runId') runId: string, @Body() body: RunVariablesBody): Promise<{ runId: string; variables: Record<string, unknown> }> {
    const run = await findRun(this.ds.manager, p, runId);
    if (!run || run.kind !== 'workflow') throw new NotFoundError('No such run.');
    if ('inputs' in body.variables) throw new ValidationError('"inputs" is not a variable name.', { field: 'variables.inputs' });
    await this.ds.query(
      `UPDATE "run" SET "metadata" = jsonb_set(coalesce("metadata", '{}'::jsonb), '{variableOverrides}', coalesce("metadata"->'variableOverrides', '{}'::jsonb) || $2::jsonb) WHERE "id" = $1 AND "tenant" = $3`,
      [run.id, JSON.stringify(body.variables), p.tenant],
    );
    return { runId: run.id, variables: body.variables };
  }
}
