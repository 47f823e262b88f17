import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req, Res, UseInterceptors } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { rawBodyText, VerbatimJsonInterceptor } from '../../platform/http/verbatim-json.interceptor';
import { jsonMemberText } from '../../platform/http/json-text';
import { CurrentPrincipal, Scopes } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { ApiErrors } from '../../platform/openapi/api-errors.decorator';
import { protocolSchemaRef } from '../../platform/openapi/protocol-schemas';
import { ConflictError } from '../../platform/errors/domain-error';
import type { ProposalView } from './proposal-view';
import { ApplyResult, ProposalsService } from './proposals.service';
import { CreateProposalDto, ProposalListQuery, RejectProposalDto, ReviseProposalDto, SynthesisRunDto } from './proposals.dto';
import { APPLY_RESULT_SCHEMA, PROPOSAL_LIST_SCHEMA, SYNTHESIS_REPORT_SCHEMA } from './proposals.schemas';
import { ACTIVATION_SCOPE } from './proposals.settings';
import { SynthesisReport, SynthesisService } from './synthesis/synthesis.service';
import { SeamAlias } from '../../platform/seams/seam-alias';

const ID_PARAM = { name: 'id', description: 'Proposal id (host-assigned UUID, stable across revisions)' };

/**
 * RFC 0096 proposals. Every handler serves the normative `/v1/proposals...` path and the
 * `/v1/host/sample/proposals...` seam path the official suite calls (`@SeamAlias`: the same handler).
 */
@ApiTags('proposals')
@Controller()
// Artifacts go out as the exact text they were submitted as.
@UseInterceptors(VerbatimJsonInterceptor)
export class ProposalsController {
  constructor(
    private readonly proposals: ProposalsService,
    private readonly synthesis: SynthesisService,
  ) {}

  @Scopes('proposals:read')
  @Get('/v1/proposals')
  @ApiOperation({ operationId: 'listProposals', summary: 'List proposals of the caller’s tenant·workspace, optionally by state and kind' })
  @ApiOkResponse({ schema: PROPOSAL_LIST_SCHEMA })
  @ApiErrors(400, 401, 403)
  @SeamAlias({ path: '/v1/host/sample/proposals', operationId: 'seamListProposals', summary: 'Test seam: list proposals' })
  async list(@CurrentPrincipal() p: Principal, @Query() q: ProposalListQuery): Promise<{ proposals: ProposalView[]; nextCursor: string | null }> {
    const page = await this.proposals.list(p, q);
    return { proposals: page.items, nextCursor: page.nextCursor };
  }

  /** Host extension: external learning systems submit drafts. */
  @Scopes('proposals:propose')
  @Post('/v1/proposals')
  @ApiOperation({ operationId: 'createProposal', summary: 'Submit an inert draft proposal (external synthesizers)' })
  @ApiBody({ type: CreateProposalDto })
  @ApiCreatedResponse({ schema: protocolSchemaRef('Proposal') })
  @ApiErrors(400, 401, 403, 413)
  async create(@CurrentPrincipal() p: Principal, @Body() body: CreateProposalDto, @Req() req: FastifyRequest): Promise<ProposalView> {
    const created = await this.proposals.create(p, {
      kind: body.kind,
      title: body.title,
      rationale: body.rationale,
      artifact: body.artifact,
      artifactText: artifactTextOf(req),
      sourceRunIds: body.provenance.sourceRunIds,
      synthesizerModel: body.provenance.synthesizerModel,
    });
    // Only synthesis evidence can collide; a submitted draft always creates a row.
    if (!created) throw new ConflictError('proposal_exists', 'The proposal already exists.');
    return created;
  }

  @Scopes('proposals:propose')
  @Post('/v1/proposals/synthesis-runs')
  @HttpCode(200)
  @ApiOperation({ operationId: 'runProposalSynthesis', summary: 'Run the proposal synthesizers now over the caller’s tenant·workspace traces' })
  @ApiBody({ type: SynthesisRunDto, required: false })
  @ApiOkResponse({ schema: SYNTHESIS_REPORT_SCHEMA })
  @ApiErrors(400, 401, 403)
  @SeamAlias({ path: '/v1/host/sample/proposals/synthesize', operationId: 'seamRunProposalSynthesis', summary: 'Test seam: run the proposal synthesizers now' })
  async synthesize(@CurrentPrincipal() p: Principal, @Body() _body: SynthesisRunDto): Promise<SynthesisReport> {
    return this.synthesis.runFor(p);
  }

  @Scopes('proposals:read')
  @Get('/v1/proposals/:id')
  @ApiOperation({ operationId: 'getProposal', summary: 'Read a proposal (including its inert artifact)' })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ schema: protocolSchemaRef('Proposal') })
  @ApiErrors(401, 403, 404)
  @SeamAlias({ path: '/v1/host/sample/proposals/:id', operationId: 'seamGetProposal', summary: 'Test seam: read a proposal' })
  async get(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<ProposalView> {
    return this.proposals.get(p, id);
  }

  @Scopes('proposals:review')
  @Patch('/v1/proposals/:id')
  @ApiOperation({ operationId: 'reviseProposal', summary: 'Revise a draft or revised proposal (state → revised; never activates)' })
  @ApiParam(ID_PARAM)
  @ApiBody({ type: ReviseProposalDto })
  @ApiOkResponse({ schema: protocolSchemaRef('Proposal') })
  @ApiErrors(400, 401, 403, 404, 409, 413, 422)
  @SeamAlias({ path: '/v1/host/sample/proposals/:id', operationId: 'seamReviseProposal', summary: 'Test seam: revise a proposal' })
  async revise(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Body() body: ReviseProposalDto, @Req() req: FastifyRequest): Promise<ProposalView> {
    const artifactText = body.artifact === undefined ? undefined : artifactTextOf(req);
    return this.proposals.revise(p, id, { artifact: body.artifact, artifactText, title: body.title, rationale: body.rationale });
  }

  /**
   * Activation. The activation scope is required in both modes (403 before anything else). direct-rbac
   * installs the stored bytes now (200); approval-gate opens an RFC 0051 gate (202) and installs when
   * it is granted. The request body is ignored.
   */
  @Scopes(ACTIVATION_SCOPE)
  @Post('/v1/proposals/:id/apply')
  @HttpCode(200)
  @ApiOperation({ operationId: 'applyProposal', summary: 'Apply a proposal: install exactly its stored artifact (or open its approval gate)' })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ schema: APPLY_RESULT_SCHEMA, description: 'Installed (or already applied).' })
  @ApiResponse({ status: 202, schema: APPLY_RESULT_SCHEMA, description: 'approval-gate activation: a gate was opened (or is open); nothing is installed yet.' })
  @ApiErrors(401, 403, 404, 409, 422)
  @SeamAlias({ path: '/v1/host/sample/proposals/:id/apply', operationId: 'seamApplyProposal', summary: 'Test seam: apply a proposal' })
  async apply(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Res({ passthrough: true }) reply: FastifyReply): Promise<ApplyResult> {
    const result = await this.proposals.apply(p, id);
    if (result.status === 'pending-approval') reply.status(202);
    return result;
  }

  @Scopes('proposals:review')
  @Post('/v1/proposals/:id/reject')
  @HttpCode(200)
  @ApiOperation({ operationId: 'rejectProposal', summary: 'Reject a draft or revised proposal (terminal-inert)' })
  @ApiParam(ID_PARAM)
  @ApiBody({ type: RejectProposalDto, required: false })
  @ApiOkResponse({ schema: protocolSchemaRef('Proposal') })
  @ApiErrors(400, 401, 403, 404, 409)
  @SeamAlias({ path: '/v1/host/sample/proposals/:id/reject', operationId: 'seamRejectProposal', summary: 'Test seam: reject a proposal' })
  async reject(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Body() body: RejectProposalDto): Promise<ProposalView> {
    return this.proposals.reject(p, id, body?.note ?? body?.reason);
  }

  @Scopes('proposals:review')
  @Delete('/v1/proposals/:id')
  @ApiOperation({ operationId: 'archiveProposal', summary: 'Archive a proposal (soft delete; terminal-inert)' })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ schema: protocolSchemaRef('Proposal') })
  @ApiErrors(401, 403, 404)
  @SeamAlias({ path: '/v1/host/sample/proposals/:id', operationId: 'seamArchiveProposal', summary: 'Test seam: archive a proposal' })
  async archive(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<ProposalView> {
    return this.proposals.archive(p, id);
  }

}

/** The submitted text of the body's `artifact` member (undefined when the raw body is not at hand). */
function artifactTextOf(req: FastifyRequest): string | undefined {
  const raw = rawBodyText(req);
  return raw === undefined ? undefined : jsonMemberText(raw, 'artifact');
}
