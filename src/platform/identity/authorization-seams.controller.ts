import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { randomBytes } from 'node:crypto';
import { IsIn, IsOptional, IsString, Matches, MaxLength } from '../http/dto-validation';
import { DataSource } from 'typeorm';
import { AuditLogService } from '../audit/audit-log.service';
import { ApiErrors } from '../openapi/api-errors.decorator';
import { ApiKeyService } from './api-key.service';
import { AnyScope, CurrentPrincipal, Scopes, TestSeam } from './decorators';
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

class MintCredentialBody {
  @ApiProperty({ enum: ['api-key'], description: 'The credential lane: `api-key` (the only lane this seam mints).' })
  @IsIn(['api-key'], { message: 'lane must be api-key (the only lane this seam mints)' })
  lane!: 'api-key';
}

/**
 * What a minted Subject may do at most: start runs and read them, and list tools (the MCP mount's own scope, so it
 * can be the MCP client of the URL-mode leg); never answer approvals or manage anything.
 */
const MINTABLE_SCOPES = ['runs:create', 'runs:read', 'tools:read'];
/** How long a minted credential lives. */
const MINTED_TTL_MS = 15 * 60_000;

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

  /**
   * The credential mint seam (seams-v2 `auth/credential/mint`, the v2-mcp-mount-map URL-mode leg): an API key of a
   * fresh principal of the caller's tenant (and workspace) that has never held a credential, carrying the caller's
   * scopes among runs:create, runs:read and tools:read (never approvals:respond), expiring in 15 minutes. Audited like
   * any key. Answers `{lane, credential, subjectId, scopes, expiresAt}` (`subjectId`: the principal).
   */
  @TestSeam()
  @Scopes()
  @AnyScope(...MINTABLE_SCOPES)
  @Post('/v1/host/sample/auth/credential/mint')
  @HttpCode(201)
  @ApiOperation({ operationId: 'seamMintCredential', summary: "(test seam) Mint a fresh principal's short-lived API key in the caller's tenant, with the caller's scopes among runs:create, runs:read and tools:read" })
  @ApiBody({ type: MintCredentialBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['lane', 'credential', 'subjectId', 'scopes', 'expiresAt'], properties: { lane: { type: 'string', enum: ['api-key'] }, credential: { type: 'string' }, subjectId: { type: 'string' }, scopes: { type: 'array', items: { type: 'string' } }, expiresAt: { type: 'string' } } } })
  @ApiErrors(400, 401, 403)
  async mint(@CurrentPrincipal() p: Principal, @Body() body: MintCredentialBody): Promise<{ lane: 'api-key'; credential: string; subjectId: string; scopes: string[]; expiresAt: string }> {
    const scopes = MINTABLE_SCOPES.filter((s) => p.scopes.has(s));
    const principal = `seam-subject-${randomBytes(9).toString('base64url')}`;
    const expiresAt = new Date(Date.now() + MINTED_TTL_MS);
    const { key } = await this.keys.create({ tenant: p.tenant, workspace: p.workspace, principal, scopes, expiresAt, name: 'credential mint seam' }, { principal: p.principal, kind: p.kind, keyId: p.keyId });
    return { lane: body.lane, credential: key, subjectId: principal, scopes, expiresAt: expiresAt.toISOString() };
  }
}
