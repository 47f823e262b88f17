import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsDefined, IsIn, IsObject, IsOptional, IsString, MaxLength, MinLength, ValidateNested } from '../../platform/http/dto-validation';
import { PROPOSAL_KINDS, ProposalKind } from '@openwop-host/plugin-sdk';
import { PageQuery } from '../../platform/pagination/page-query';
import { PROPOSAL_STATES, ProposalState } from './proposal-view';

export class ProposalListQuery extends PageQuery {
  @ApiPropertyOptional({ enum: PROPOSAL_STATES })
  @IsOptional()
  @IsIn(PROPOSAL_STATES)
  state?: ProposalState;

  @ApiPropertyOptional({ enum: PROPOSAL_KINDS })
  @IsOptional()
  @IsIn(PROPOSAL_KINDS)
  kind?: ProposalKind;
}

export class ProvenanceDto {
  @ApiProperty({ type: [String], description: 'Runs whose traces produced the draft (redaction-safe ids).' })
  @IsArray()
  @ArrayMaxSize(1000)
  @IsString({ each: true })
  @MinLength(1, { each: true })
  @MaxLength(256, { each: true })
  sourceRunIds: string[];

  @ApiPropertyOptional({ description: 'Opaque id of the model or process that synthesized the draft.' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  synthesizerModel?: string;
}

export class CreateProposalDto {
  @ApiProperty({ enum: PROPOSAL_KINDS })
  @IsIn(PROPOSAL_KINDS)
  kind: ProposalKind;

  @ApiPropertyOptional({ maxLength: 200 })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  title?: string;

  @ApiPropertyOptional({ maxLength: 4000, description: 'Plain-language justification; no secrets or PII.' })
  @IsOptional()
  @IsString()
  @MaxLength(4000)
  rationale?: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The proposed artifact, shaped by kind; validated against the kind at revise and apply.' })
  @IsObject()
  artifact: Record<string, unknown>;

  @ApiProperty({ type: ProvenanceDto })
  @IsDefined()
  @IsObject()
  @ValidateNested()
  @Type(() => ProvenanceDto)
  provenance: ProvenanceDto;
}

export class ReviseProposalDto {
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Replaces the artifact (must be well-formed for the kind: 422 otherwise).' })
  @IsOptional()
  @IsObject()
  artifact?: Record<string, unknown>;

  @ApiPropertyOptional({ maxLength: 200 })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  title?: string;

  @ApiPropertyOptional({ maxLength: 4000 })
  @IsOptional()
  @IsString()
  @MaxLength(4000)
  rationale?: string;

  @ApiPropertyOptional({ maxLength: 2000, description: 'Reviewer note (accepted for CLI compatibility; not stored).' })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  note?: string;
}

export class RejectProposalDto {
  @ApiPropertyOptional({ maxLength: 2000 })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  note?: string;

  @ApiPropertyOptional({ maxLength: 2000, description: 'Alias of note.' })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  reason?: string;
}

/** A synthesis run takes no options (an empty object or no body). */
export class SynthesisRunDto {}
