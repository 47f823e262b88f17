import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsInt, IsObject, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength, ValidateIf } from '../../platform/http/dto-validation';
import { MAX_CREDENTIAL_BYTES } from './credentials/credential-store.service';
import { MAX_CREDENTIAL_OVERLAP_SECONDS } from './connections.settings';

/** A bare provider id, or `<packName>#<id>` naming the pack that must define it. */
export const PROVIDER_REF = /^(?:(?:core|vendor|community|private)\.[a-z][a-z0-9_-]*(?:\.[a-z][a-zA-Z0-9_-]*)+#)?[a-z][a-z0-9-]{0,127}$/;
export const CONNECTION_NAME = /^[A-Za-z0-9][A-Za-z0-9._ -]{0,127}$/;
const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
const PROVIDER_MESSAGE = 'provider must be a provider id (lowercase letters, digits, "-") or <packName>#<id>';

export class CreateConnectionBody {
  @ApiProperty({ description: 'Provider id (resolved against installed packs and built-ins).', example: 'github' })
  @IsString()
  @MaxLength(300)
  @Matches(PROVIDER_REF, { message: PROVIDER_MESSAGE })
  provider: string;

  @ApiProperty({ description: 'Unique name of the connection in the tenant.', example: 'github-ci' })
  @IsString()
  @Matches(CONNECTION_NAME, { message: 'name must be 1-128 letters, digits, ".", "_", "-" or spaces, starting with a letter or digit' })
  name: string;

  @ApiPropertyOptional({ description: 'The credential value (API key, token...). Write-only: stored encrypted and never returned. Omitted for an OAuth connection (RFC 0047), whose tokens come from each grant.', writeOnly: true })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_CREDENTIAL_BYTES)
  credential?: string;
}

export class RotateCredentialBody {
  @ApiProperty({ description: 'The new credential value. Write-only: stored encrypted and never returned.', writeOnly: true })
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_CREDENTIAL_BYTES)
  credential: string;

  @ApiPropertyOptional({
    description:
      'Two-key overlap (RFC 0046 §D): seconds the replaced credential is still offered after this rotation (when the provider refuses the new one), then deleted. 0 retires it at once. Default: connections.credentialOverlapSeconds (86400).',
    type: 'integer',
    minimum: 0,
    maximum: MAX_CREDENTIAL_OVERLAP_SECONDS,
  })
  // Absent: the default; null is refused like any other non-integer.
  @ValidateIf((o: { overlapSeconds?: unknown }) => o.overlapSeconds !== undefined)
  @IsInt()
  @Min(0)
  @Max(MAX_CREDENTIAL_OVERLAP_SECONDS)
  overlapSeconds?: number;
}

export class EgressCheckBody {
  @ApiProperty({ description: 'The host a request would be sent to (no scheme, port or path).', example: 'api.github.com' })
  @IsString()
  @MaxLength(253)
  requestHost: string;
}

export class ConsentPlanQuery {
  @ApiPropertyOptional({ description: 'Comma-separated: read, write (default read).', example: 'read,write' })
  @IsOptional()
  @Transform(({ value }) => (typeof value === 'string' ? value.split(',').map((s) => s.trim()).filter(Boolean) : value))
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(2)
  @IsIn(['read', 'write'], { each: true })
  requested?: Array<'read' | 'write'>;
}

export class SeamInstallBody {
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'A connection pack manifest.' })
  @IsObject()
  manifest: Record<string, unknown>;
}

export class SeamResolveBody {
  @ApiProperty()
  @IsString()
  @MaxLength(300)
  provider: string;

  @ApiPropertyOptional({ description: 'Stand-in for a built-in provider of this version.' })
  @IsOptional()
  @IsString()
  @Matches(SEMVER, { message: 'simulateBuiltinVersion must be a SemVer version' })
  simulateBuiltinVersion?: string;
}

export class SeamConsentPlanBody {
  @ApiProperty()
  @IsString()
  @MaxLength(300)
  provider: string;

  @ApiProperty({ type: [String], enum: ['read', 'write'] })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(2)
  @IsIn(['read', 'write'], { each: true })
  requested: Array<'read' | 'write'>;
}

export class SeamEgressCheckBody extends EgressCheckBody {
  @ApiProperty()
  @IsString()
  @MaxLength(300)
  provider: string;
}

export class SeamCredentialEchoBody {
  @ApiProperty({ description: 'Plaintext the seam seeds as a credential; it must never come back.', writeOnly: true, maxLength: MAX_CREDENTIAL_BYTES })
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_CREDENTIAL_BYTES)
  canary: string;
}
