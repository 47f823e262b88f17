import { Injectable } from '@nestjs/common';
import { AuditLogService } from '../../../platform/audit/audit-log.service';
import { AuditController } from '../../../platform/audit/audit.controller';
import { AuditVerifyQuery, verifyAuditLog } from '../../../platform/audit/audit-verify';
import { EngineCall, EngineMethod, UnaryEngineMethod } from '../engine-method';
import type { JsonObject } from '../json-struct';

/**
 * VerifyAuditLog: `GET /v1/audit/verify`. proto3 cannot tell an unset `to_seq` from 0, and a chain's
 * sequences start at 1, so `to_seq: 0` means what an absent `toSeq` means over REST: the chain head.
 */
@Injectable()
@EngineMethod()
export class VerifyAuditLogMethod implements UnaryEngineMethod {
  readonly name = 'VerifyAuditLog';
  readonly kind = 'unary';
  readonly rest = { controller: AuditController, handler: 'verify' };

  constructor(private readonly audit: AuditLogService) {}

  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    const raw = { ...request };
    if (raw.toSeq === 0) delete raw.toSeq;
    const q = await call.validate(AuditVerifyQuery, raw, 'query');
    return verifyAuditLog(this.audit, call.requirePrincipal(), q);
  }
}
