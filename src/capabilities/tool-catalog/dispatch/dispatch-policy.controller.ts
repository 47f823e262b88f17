import { Body, Controller, Get, HttpCode, Put } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsInt, IsObject, IsOptional, Min } from '../../../platform/http/dto-validation';
import { CurrentPrincipal, Scopes } from '../../../platform/identity/decorators';
import { Principal, requireTenantLevel } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import type { DispatchDecision } from './dispatch-policy';
import { DispatchPolicyView, ToolDispatchService } from './tool-dispatch.service';

const MANAGE_TOOLS_SCOPE = 'tools:manage';

const DECISION = { type: 'string', enum: ['allow', 'approve', 'deny'] };
const TIERS = {
  type: 'object',
  additionalProperties: false,
  properties: { pure: DECISION, read: DECISION, write: DECISION, exec: DECISION },
  description: 'The decision per safety tier of the tool descriptor.',
};
const TOOLS = {
  type: 'object',
  additionalProperties: DECISION,
  description: 'The decision per tool id, or per id prefix written with a trailing `*` (`mcp:files.*`); an exact id wins over a prefix, a longer prefix over a shorter one, and any of them over the tier.',
};
const DOCUMENT = { type: 'object', additionalProperties: false, properties: { tiers: TIERS, tools: TOOLS } };

const POLICY_VIEW = {
  type: 'object',
  required: ['revision', 'source', 'tiers', 'tools', 'defaults', 'override', 'updatedAt', 'updatedBy'],
  properties: {
    revision: { type: 'integer', minimum: 0, description: 'The tenant\'s policy revision: 0 until its first change, incremented on every change. Every decision records it.' },
    source: { type: 'string', enum: ['default', 'config', 'tenant'], description: '`default`: nothing configured (every call allowed, nothing recorded); `config`: the host config\'s tools.dispatchPolicy; `tenant`: the tenant\'s override over it.' },
    tiers: { ...TIERS, required: ['pure', 'read', 'write', 'exec'], description: 'The tier decisions in force.' },
    tools: { ...TOOLS, description: 'The per-tool decisions in force (config and override merged).' },
    defaults: { ...DOCUMENT, nullable: true, description: 'The host config\'s tools.dispatchPolicy, or null.' },
    override: { ...DOCUMENT, nullable: true, description: 'The tenant\'s override, or null.' },
    updatedAt: { type: 'string', format: 'date-time', nullable: true },
    updatedBy: { type: 'string', nullable: true },
  },
};

class PutDispatchPolicyBody {
  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string', enum: ['allow', 'approve', 'deny'] }, description: 'The decision per safety tier (pure, read, write, exec).', example: { write: 'approve', exec: 'deny' } })
  @IsOptional()
  @IsObject()
  tiers?: Record<string, DispatchDecision>;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string', enum: ['allow', 'approve', 'deny'] }, description: TOOLS.description, example: { 'mcp:files.read_file': 'allow', 'mcp:search.*': 'approve' } })
  @IsOptional()
  @IsObject()
  tools?: Record<string, DispatchDecision>;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'The revision the change was made from: 409 dispatch_policy_conflict when the policy has moved on since.' })
  @IsOptional()
  @IsInt()
  @Min(0)
  expectedRevision?: number;
}

/**
 * The tenant's governed dispatch policy: which tool calls are allowed, wait on an approval or are
 * denied, by safety tier and per tool. Reading and changing it need `tools:manage` on a tenant-level
 * credential (the policy governs the whole tenant).
 */
@ApiTags('tools')
@Controller()
export class DispatchPolicyController {
  constructor(private readonly dispatch: ToolDispatchService) {}

  @Scopes(MANAGE_TOOLS_SCOPE)
  @Get('/v1/tools/dispatch-policy')
  @ApiOperation({ operationId: 'getToolDispatchPolicy', summary: 'Read the tenant\'s governed tool dispatch policy (what is in force, its layers and revision)' })
  @ApiOkResponse({ schema: POLICY_VIEW })
  @ApiErrors(401, 403)
  async get(@CurrentPrincipal() p: Principal): Promise<DispatchPolicyView> {
    requireTenantLevel(p, 'The tool dispatch policy and its changes');
    return this.dispatch.policy(p.tenant);
  }

  @Scopes(MANAGE_TOOLS_SCOPE)
  @Put('/v1/tools/dispatch-policy')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'putToolDispatchPolicy',
    summary: 'Replace the tenant\'s override of the tool dispatch policy (a new revision)',
    description: 'Tiers and tools the body does not name keep the host config\'s decision (allow when none). Audited as tool.dispatch-policy-changed. 400 validation_error on a malformed policy; 409 dispatch_policy_conflict when expectedRevision is not the revision in force.',
  })
  @ApiBody({ type: PutDispatchPolicyBody })
  @ApiOkResponse({ schema: POLICY_VIEW })
  @ApiErrors(400, 401, 403, 409)
  async put(@CurrentPrincipal() p: Principal, @Body() body: PutDispatchPolicyBody): Promise<DispatchPolicyView> {
    requireTenantLevel(p, 'The tool dispatch policy and its changes');
    const { expectedRevision, ...doc } = body ?? {};
    return this.dispatch.update(p, { ...(doc.tiers !== undefined ? { tiers: doc.tiers } : {}), ...(doc.tools !== undefined ? { tools: doc.tools } : {}) }, expectedRevision);
  }
}
