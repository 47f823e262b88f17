import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { ForbiddenError, ValidationError } from '../errors/domain-error';
import { CurrentPrincipal, Scopes } from '../identity/decorators';
import type { Principal } from '../identity/principal';
import { ApiErrors } from '../openapi/api-errors.decorator';
import { protocolSchemaRef } from '../openapi/protocol-schemas';
import { AuditLogService, AuditVerifyResult } from './audit-log.service';

const MAX_SEQ = Number.MAX_SAFE_INTEGER;

export class AuditVerifyQuery {
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'First sequence to verify, inclusive (default 0: from the start of the chain).' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(MAX_SEQ)
  fromSeq?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'Last sequence to verify, inclusive (default: the chain head). At most 100000 entries are re-walked per call.' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(MAX_SEQ)
  toSeq?: number;
}

/** `GET /v1/audit/verify` (auth-profiles.md §"Audit-log integrity" 4): the caller tenant's chain, never another's. */
@ApiTags('audit')
@Controller()
export class AuditController {
  constructor(private readonly audit: AuditLogService) {}

  @Scopes('audit:read')
  @Get('/v1/audit/verify')
  @ApiOperation({
    operationId: 'verifyAuditLog',
    summary: "Re-walk the tenant's audit hash chain over [fromSeq, toSeq] and verify its signed checkpoints",
    description: 'Tenant-level credentials only: the chain is the whole tenant\'s, so a workspace-bound credential is refused (403).',
  })
  @ApiOkResponse({ schema: protocolSchemaRef('AuditVerifyResult') })
  @ApiErrors(400, 401, 403)
  verify(@CurrentPrincipal() p: Principal, @Query() q: AuditVerifyQuery): Promise<AuditVerifyResult> {
    return verifyAuditLog(this.audit, p, q);
  }
}

/** The verify rules of the REST route and of gRPC VerifyAuditLog: tenant-level credentials, an ordered range. */
export function verifyAuditLog(audit: AuditLogService, p: Principal, q: AuditVerifyQuery): Promise<AuditVerifyResult> {
  if (p.workspace) throw new ForbiddenError('The audit log is verified by tenant-level credentials only.', { requiredBinding: 'tenant' });
  const fromSeq = q.fromSeq ?? 0;
  const toSeq = q.toSeq ?? MAX_SEQ;
  if (toSeq < fromSeq) throw new ValidationError('toSeq must be greater than or equal to fromSeq.', { fromSeq, toSeq });
  return audit.verify(p.tenant, fromSeq, toSeq);
}
