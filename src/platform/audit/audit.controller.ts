import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Scopes } from '../identity/decorators';
import type { Principal } from '../identity/principal';
import { ApiErrors } from '../openapi/api-errors.decorator';
import { protocolSchemaRef } from '../openapi/protocol-schemas';
import { AuditLogService, AuditVerifyResult } from './audit-log.service';
import { AuditVerifyQuery, verifyAuditLog } from './audit-verify';

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
    description: "Tenant-level credentials only: the chain is the whole tenant's, so a workspace-bound credential is refused (403). A verifier that pinned a checkpoint before passes pinnedSeq and pinnedRoot: a truncation below the pin, or a rewrite of it, is reported as an anomaly at pinnedSeq.",
  })
  @ApiOkResponse({ schema: protocolSchemaRef('AuditVerifyResult') })
  @ApiErrors(400, 401, 403)
  verify(@CurrentPrincipal() p: Principal, @Query() q: AuditVerifyQuery): Promise<AuditVerifyResult> {
    return verifyAuditLog(this.audit, p, q);
  }
}
