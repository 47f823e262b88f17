import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Scopes } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { ApiErrors } from '../../platform/openapi/api-errors.decorator';
import { ApprovalDecisionDto, ApprovalListQuery } from './approvals.dto';
import { APPROVAL_LIST_SCHEMA, APPROVAL_SCHEMA } from './approval.schemas';
import { ApprovalsService, ApprovalView } from './approvals.service';

const ID_PARAM = { name: 'id', description: 'Approval gate id' };

/** RFC 0051 approval gates: opened by proposal apply in approval-gate activation mode and by run steps (`core.approval`, tools that need approval). */
@ApiTags('approvals')
@Controller()
export class ApprovalsController {
  constructor(private readonly approvals: ApprovalsService) {}

  @Scopes('approvals:respond')
  @Get('/v1/approvals')
  @ApiOperation({ operationId: 'listApprovals', summary: 'List approval gates of the caller’s tenant·workspace' })
  @ApiOkResponse({ schema: APPROVAL_LIST_SCHEMA })
  @ApiErrors(400, 401, 403)
  async list(@CurrentPrincipal() p: Principal, @Query() q: ApprovalListQuery): Promise<{ approvals: ApprovalView[]; nextCursor: string | null }> {
    const page = await this.approvals.list(p, q);
    return { approvals: page.items, nextCursor: page.nextCursor };
  }

  @Scopes('approvals:respond')
  @Get('/v1/approvals/:id')
  @ApiOperation({ operationId: 'getApproval', summary: 'Read an approval gate and its decisions' })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ schema: APPROVAL_SCHEMA })
  @ApiErrors(401, 403, 404)
  async get(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<ApprovalView> {
    return this.approvals.get(p, id);
  }

  /** Grants the gate; the grant that meets the quorum releases it in the same transaction: the run step resumes, the proposal's artifact is installed. */
  @Scopes('approvals:respond')
  @Post('/v1/approvals/:id/grant')
  @HttpCode(200)
  @ApiOperation({ operationId: 'grantApproval', summary: 'Grant an approval gate (released once the quorum is met: the run step resumes, the proposal is installed)' })
  @ApiParam(ID_PARAM)
  @ApiBody({ type: ApprovalDecisionDto, required: false })
  @ApiOkResponse({ schema: APPROVAL_SCHEMA })
  @ApiErrors(400, 401, 403, 404, 409, 422)
  async grant(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Body() body: ApprovalDecisionDto): Promise<ApprovalView> {
    return this.approvals.grant(p, id, body?.reason);
  }

  /**
   * The gate's override path (RFC 0051 §B; offered by `core.openwop.governance.approvalGate` with an
   * `override` requirement): the caller must satisfy that requirement and give a reason. It is
   * recorded as `approval.overridden {principal, reason}` and in the audit log, and counts as one
   * grant, or releases the gate at once when the gate sets `overrideBypassesQuorum` (RFC 0093).
   */
  @Scopes('approvals:respond')
  @Post('/v1/approvals/:id/override')
  @HttpCode(200)
  @ApiOperation({ operationId: 'overrideApproval', summary: 'Take an approval gate’s override path (role-gated, reason required, audited as approval.overridden)' })
  @ApiParam(ID_PARAM)
  @ApiBody({ type: ApprovalDecisionDto, required: true })
  @ApiOkResponse({ schema: APPROVAL_SCHEMA })
  @ApiErrors(400, 401, 403, 404, 409, 422)
  async override(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Body() body: ApprovalDecisionDto): Promise<ApprovalView> {
    return this.approvals.vote(p, id, 'granted', { reason: body?.reason, override: true });
  }

  @Scopes('approvals:respond')
  @Post('/v1/approvals/:id/deny')
  @HttpCode(200)
  @ApiOperation({ operationId: 'denyApproval', summary: 'Deny an approval gate (closes it: the run step fails, the proposal is not installed)' })
  @ApiParam(ID_PARAM)
  @ApiBody({ type: ApprovalDecisionDto, required: false })
  @ApiOkResponse({ schema: APPROVAL_SCHEMA })
  @ApiErrors(400, 401, 403, 404, 409)
  async deny(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Body() body: ApprovalDecisionDto): Promise<ApprovalView> {
    return this.approvals.deny(p, id, body?.reason);
  }
}
