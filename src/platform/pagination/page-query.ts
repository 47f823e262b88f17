import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from '../http/dto-validation';

export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 500;
export const MAX_CURSOR_LENGTH = 2048;

/** One page of a list: the items and the cursor of the next page (null on the last page). */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** What a caller asks for: at most `limit` items after `cursor`. */
export interface PageRequest {
  limit?: number;
  cursor?: string;
}

/**
 * `?limit=&cursor=` of every paginated list route. A route's own query DTO extends it, so the
 * validation (400 validation_error) and the OpenAPI parameters are the same everywhere.
 */
export class PageQuery implements PageRequest {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT, description: 'Items per page.' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_LIMIT)
  limit?: number;

  @ApiPropertyOptional({
    type: 'string',
    maxLength: MAX_CURSOR_LENGTH,
    pattern: '^[A-Za-z0-9_-]+$',
    description: 'Opaque: the `nextCursor` of the previous page, valid only for the same route, filters and caller tenant·workspace.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_CURSOR_LENGTH)
  @Matches(/^[A-Za-z0-9_-]+$/, { message: 'cursor must be a nextCursor value returned by this route' })
  cursor?: string;
}

/** The `nextCursor` property of every paginated list response (OpenAPI). */
export const NEXT_CURSOR_PROPERTY: { type: 'string'; nullable: true; description: string } = {
  type: 'string',
  nullable: true,
  description: 'Pass as `cursor` to get the next page; null on the last page.',
};

/** A paginated list response schema: `{<itemsKey>: [...], nextCursor}` (OpenAPI). */
export function pageSchema(itemsKey: string, items: Record<string, unknown>): Record<string, unknown> {
  return {
    type: 'object',
    required: [itemsKey, 'nextCursor'],
    properties: { [itemsKey]: { type: 'array', items }, nextCursor: NEXT_CURSOR_PROPERTY },
  };
}

/** For response classes: `@ApiNextCursor() nextCursor: string | null`. */
export function ApiNextCursor(): PropertyDecorator {
  return ApiProperty({ type: 'string', nullable: true, description: NEXT_CURSOR_PROPERTY.description });
}
