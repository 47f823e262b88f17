import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength, MinLength } from '../../platform/http/dto-validation';
import { PageQuery } from '../../platform/pagination/page-query';

export class ApprovalDecisionDto {
  @ApiPropertyOptional({ maxLength: 2000, description: 'Redaction-safe reason recorded with the decision.' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(2000)
  reason?: string;
}

export class ApprovalListQuery extends PageQuery {
  @ApiPropertyOptional({ enum: ['pending', 'granted', 'denied', 'expired', 'cancelled'] })
  @IsOptional()
  @IsIn(['pending', 'granted', 'denied', 'expired', 'cancelled'])
  state?: 'pending' | 'granted' | 'denied' | 'expired' | 'cancelled';
}
