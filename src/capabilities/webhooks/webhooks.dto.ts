import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsInt, IsObject, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength } from '../../platform/http/dto-validation';
import { IDENTIFIER } from '../../platform/identity/principal';
import { PageQuery } from '../../platform/pagination/page-query';

/** A run event type (run-event.schema.json `type`): a dotted name such as `run.completed`. */
export const EVENT_TYPE = /^[a-z][a-zA-Z0-9_-]*(\.[a-zA-Z0-9_-]+)+$/;
export const MAX_URL_LENGTH = 2048;

export class RegisterWebhookBody {
  @ApiProperty({ description: 'Delivery URL: https:// (http:// only with OPENWOP_WEBHOOK_ALLOW_PRIVATE=true); private, loopback, link-local and metadata targets are refused.', example: 'https://example.com/webhooks/openwop', maxLength: MAX_URL_LENGTH })
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_URL_LENGTH)
  url: string;

  @ApiProperty({ description: 'Run event types to deliver (RunEventType values, or vendor-prefixed types).', example: ['run.completed', 'run.failed'], type: [String], minItems: 1, maxItems: 64 })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(64)
  @IsString({ each: true })
  @Matches(EVENT_TYPE, { each: true, message: 'each event must be a dotted run event type such as run.completed' })
  events: string[];

  @ApiPropertyOptional({ description: "The tenant the subscription lives under; defaults to the credential's tenant and must equal it (403 otherwise)." })
  @IsOptional()
  @IsString()
  @Matches(IDENTIFIER, { message: 'tenantId must be 1-128 letters, digits or ._:@-' })
  tenantId?: string;

  @ApiPropertyOptional({ description: 'Deliver only events of runs whose RunOptions.tags overlap these.', type: [String], maxItems: 32 })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(32)
  @IsString({ each: true })
  @MinLength(1, { each: true })
  @MaxLength(128, { each: true })
  tags?: string[];
}

export class TenantQuery {
  @ApiPropertyOptional({ description: "The tenant the subscription lives under (webhooks.md); must equal the credential's tenant (403 otherwise)." })
  @IsOptional()
  @IsString()
  @Matches(IDENTIFIER, { message: 'tenantId must be 1-128 letters, digits or ._:@-' })
  tenantId?: string;
}

/** `?tenantId=` plus the `?limit=&cursor=` of every paged list. */
export class WebhookListQuery extends PageQuery {
  @ApiPropertyOptional({ description: "The tenant the subscriptions live under (webhooks.md); must equal the credential's tenant (403 otherwise)." })
  @IsOptional()
  @IsString()
  @Matches(IDENTIFIER, { message: 'tenantId must be 1-128 letters, digits or ._:@-' })
  tenantId?: string;
}

export class DeliveriesQuery extends WebhookListQuery {
  @ApiPropertyOptional({ enum: ['pending', 'delivering', 'succeeded', 'failed'] })
  @IsOptional()
  @IsIn(['pending', 'delivering', 'succeeded', 'failed'])
  status?: string;
}

export class WebhookSurfaceBody {
  @ApiProperty({ description: "The caller's own tenant, or the name of a sandbox tenant of the caller's (`<caller tenant>/seam/<tenantId>`), never another real tenant (test seam only)." })
  @IsString()
  @Matches(IDENTIFIER, { message: 'tenantId must be 1-128 letters, digits or ._:@-' })
  tenantId: string;

  @ApiProperty({ enum: ['webhooks'] })
  @IsString()
  surface: string;

  @ApiProperty({ enum: ['register', 'list', 'unregister'] })
  @IsIn(['register', 'list', 'unregister'])
  op: 'register' | 'list' | 'unregister';

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'register: {url, events, tags?}; unregister: {webhookId}; list: {}.' })
  @IsOptional()
  @IsObject()
  args?: Record<string, unknown>;
}

/**
 * `POST /webhooks` under protocol major 2 (webhooks.md §Surfaces): closed, no `tenantId` (the
 * caller's tenant owns the subscription); `secret` optional (generated and returned once when
 * absent); `signatureAlgorithms` opts into Standard Webhooks (it must then list `v1` and
 * `standard-webhooks-1`, with a `whsec_` secret; the service checks what depends on the advertised set).
 */
export class RegisterWebhookV2Body {
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_URL_LENGTH)
  url: string;

  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(64)
  @IsString({ each: true })
  @Matches(EVENT_TYPE, { each: true, message: 'each event must be a dotted run event type such as run.completed' })
  events: string[];

  @IsOptional()
  @IsString()
  @MinLength(16)
  @MaxLength(256)
  secret?: string;

  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(32)
  @IsString({ each: true })
  @MinLength(1, { each: true })
  @MaxLength(128, { each: true })
  tags?: string[];

  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(8)
  @IsString({ each: true })
  signatureAlgorithms?: string[];
}

export class RotateSecretBody {
  @ApiProperty({ description: 'The new secret, `whsec_` + base64 of 24-64 bytes. It signs beside the previous one for `webhooks.secretRotation.overlapSeconds`, then alone. Never returned.' })
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  secret: string;
}

export class DeadLettersQuery extends WebhookListQuery {}

export class WebhookReceiveBody {
  @ApiProperty({ description: 'The subscription secret the delivery is verified with.' })
  @IsString()
  @MinLength(1)
  @MaxLength(1024)
  secret: string;

  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, description: 'The delivery headers (the X-openwop-* or OpenWOP-* family).' })
  @IsObject()
  headers: Record<string, string>;

  @ApiProperty({ description: 'The raw delivery body, exactly as received.' })
  @IsString()
  @MaxLength(1_048_576)
  body: string;
}
