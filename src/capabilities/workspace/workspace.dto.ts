import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, MaxLength, Min } from '../../platform/http/dto-validation';
import { PageQuery } from '../../platform/pagination/page-query';
import { WORKSPACE_PREFIX_PATTERN } from './workspace-path';

/** An advisory MIME type: `type/subtype`, optionally with parameters. */
const CONTENT_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;[\x20-\x7e]*)?$/;

/** `workspace-file-create.schema.json`: the body of `PUT /v1/host/workspace/files/{path}` (closed: path, version and etag are the host's). */
export class PutWorkspaceFileBody {
  @ApiProperty({ description: 'UTF-8 file body. At most `workspace.maxFileBytes` bytes (413 `workspace_too_large` beyond).' })
  @IsString()
  content: string;

  @ApiPropertyOptional({ description: 'Advisory MIME type of `content`; `text/markdown` when absent.', maxLength: 255 })
  @IsOptional()
  @IsString()
  @MaxLength(255)
  @Matches(CONTENT_TYPE, { message: 'contentType must be a MIME type such as text/markdown' })
  contentType?: string;
}

export class WorkspaceListQuery extends PageQuery {
  @ApiPropertyOptional({ description: 'Only the files whose path starts with this prefix (the namespace is flat: `notes/` matches `notes/a.md` and `notes/b/c.md`).', maxLength: 256, pattern: WORKSPACE_PREFIX_PATTERN.source })
  @IsOptional()
  @IsString()
  @Matches(WORKSPACE_PREFIX_PATTERN, { message: 'prefix must be at most 256 letters, digits or . _ / -' })
  prefix?: string;
}

export class WorkspaceReadQuery {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: 'A retained earlier version (the latest `workspace.maxVersions` are kept); absent: the current one.' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  version?: number;
}
