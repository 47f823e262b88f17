import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { DataSource } from 'typeorm';
import { AuditLogService } from '../audit/audit-log.service';
import { ApiErrors } from '../openapi/api-errors.decorator';
import { ApiKeyService } from './api-key.service';
import { CurrentPrincipal, Scopes, TestSeam } from './decorators';
import { IDENTIFIER, Principal } from './principal';
import { isValidScope } from './scopes';

class DecideBody {
  @ApiProperty({ description: 'The principal (of the caller\'s tenant) the decision is for.' })
  @IsString()
  @Matches(IDENTIFIER)
  principal!: string;

  @ApiProperty({ description: 'The action: a host scope such as `runs:cancel`.' })
  @IsString()
  @MaxLength(200)
  action!: string;

  @ApiPropertyOptional({ description: 'What the action is on (recorded, not interpreted).' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  resource?: string;
}

interface AuthorizationDecision {
  principal: string;
  action: string;
  resource?: string;
  allowed: boolean;
  reason: 'granted' | 'unseeded-principal' | 'scope-missing' | 'unknown-action';
}

/**
 * The RFC 0049 decision seam (host-sample-test-seams.md, `authorization-fail-closed`): the host's own
 * decision for a principal of the caller's tenant (and workspace) and an action, from what that
 * principal holds now (its live API keys' scopes and roles). Fail closed: a principal with no live
 * credential (no role seeded), an action that is not a host scope, or a scope it does not hold is
 * `allowed: false`. Every decision is recorded in the audit log as `authorization.decided`.
 */
@ApiTags('keys')
@Controller()
export class AuthorizationSeamsController {
  constructor(
    private readonly keys: ApiKeyService,
    private readonly audit: AuditLogService,
    private readonly ds: DataSource,
  ) {}

  @TestSeam()
  @Scopes('audit:read')
  @Post('/v1/host/sample/authorization/decide')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamAuthorizationDecide', summary: '(test seam) The host\'s authorization decision for a principal of the caller\'s tenant and an action: {allowed, reason}, audited' })
  @ApiBody({ type: DecideBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['principal', 'action', 'allowed', 'reason'], properties: { principal: { type: 'string' }, action: { type: 'string' }, resource: { type: 'string' }, allowed: { type: 'boolean' }, reason: { type: 'string', enum: ['granted', 'unseeded-principal', 'scope-missing', 'unknown-action'] } } } })
  @ApiErrors(400, 401, 403)
  async decide(@CurrentPrincipal() p: Principal, @Body() body: DecideBody): Promise<AuthorizationDecision> {
    const grants = await this.keys.grantsOf(p, body.principal);
    const reason: AuthorizationDecision['reason'] = !isValidScope(body.action) ? 'unknown-action' : !grants ? 'unseeded-principal' : grants.has(body.action) ? 'granted' : 'scope-missing';
    const decision: AuthorizationDecision = { principal: body.principal, action: body.action, ...(body.resource !== undefined ? { resource: body.resource } : {}), allowed: reason === 'granted', reason };
    await this.ds.transaction((m) =>
      this.audit.record(m, {
        tenant: p.tenant,
        workspace: p.workspace,
        actor: { principal: p.principal, kind: p.kind, keyId: p.keyId },
        action: 'authorization.decided',
        resource: { type: 'principal', id: body.principal },
        details: { action: body.action, resource: body.resource, allowed: decision.allowed, reason },
      }),
    );
    return decision;
  }
}
