import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from '../../../platform/http/dto-validation';
import { PageQuery } from '../../../platform/pagination/page-query';

/** `GET /v1/dead-letters` query: a page, optionally of one workflow. */
export class DeadLetterListQuery extends PageQuery {
  @ApiPropertyOptional({ type: 'string', maxLength: 128, description: 'Only the dead-lettered runs of this workflow.' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  workflowId?: string;
}

/** The body of a dead letter's retry: nothing (an empty object is accepted). */
export class DeadLetterRetryDto {}
