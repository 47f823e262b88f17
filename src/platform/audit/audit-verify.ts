import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, Matches, Max, Min } from '../http/dto-validation';
import { ForbiddenError, ValidationError } from '../errors/domain-error';
import type { Principal } from '../identity/principal';
import type { AuditLogService, AuditVerifyResult } from './audit-log.service';

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

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description: "Sequence of a checkpoint the caller verified before (its pin), within [fromSeq, toSeq]; with pinnedRoot. The checkpoint must still be there with that root: a chain truncated below it, or a checkpoint rewritten at it, is an anomaly at pinnedSeq (expectedPrevHash the pinned root, actualPrevHash the stored one or \"\").",
  })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_SEQ)
  pinnedSeq?: number;

  @ApiPropertyOptional({ type: 'string', pattern: '^[0-9a-f]{64}$', description: 'The Merkle root (lowercase hex) of the pinned checkpoint; with pinnedSeq.' })
  @IsOptional()
  @Matches(/^[0-9a-f]{64}$/, { message: 'pinnedRoot must be a Merkle root: 64 lowercase hex digits' })
  pinnedRoot?: string;
}

/** The verify rules of the REST route and of gRPC VerifyAuditLog: tenant-level credentials, an ordered range. */
export function verifyAuditLog(audit: AuditLogService, p: Principal, q: AuditVerifyQuery): Promise<AuditVerifyResult> {
  if (p.workspace) throw new ForbiddenError('The audit log is verified by tenant-level credentials only.', { requiredBinding: 'tenant' });
  const fromSeq = q.fromSeq ?? 0;
  const toSeq = q.toSeq ?? MAX_SEQ;
  if (toSeq < fromSeq) throw new ValidationError('toSeq must be greater than or equal to fromSeq.', { fromSeq, toSeq });
  if ((q.pinnedSeq === undefined) !== (q.pinnedRoot === undefined)) throw new ValidationError('pinnedSeq and pinnedRoot go together: give both or neither.', { pinnedSeq: q.pinnedSeq ?? null, pinnedRoot: q.pinnedRoot ?? null });
  if (q.pinnedSeq !== undefined && (q.pinnedSeq < fromSeq || q.pinnedSeq > toSeq)) throw new ValidationError('pinnedSeq must lie within [fromSeq, toSeq].', { fromSeq, toSeq, pinnedSeq: q.pinnedSeq });
  const pin = q.pinnedSeq !== undefined && q.pinnedRoot !== undefined ? { seq: q.pinnedSeq, root: q.pinnedRoot } : undefined;
  return audit.verify(p.tenant, fromSeq, toSeq, pin);
}
