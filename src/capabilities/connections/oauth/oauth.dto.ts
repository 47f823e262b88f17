import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsBoolean, IsOptional, IsString, MaxLength, MinLength } from '../../../platform/http/dto-validation';

/** The body of POST /v1/connections/{id}/oauth/authorize. */
export class AuthorizeBody {
  @ApiPropertyOptional({ description: "Consent group keys of the provider (its pack's `auth.scopes` groups). Neither groups nor scopes: the read groups.", example: ['widget.read'] })
  @IsOptional() @IsArray() @ArrayMaxSize(32) @IsString({ each: true }) @MaxLength(128, { each: true })
  groups?: string[];

  @ApiPropertyOptional({ description: 'Raw scopes, each declared by one of the groups (or the client extra scopes).' })
  @IsOptional() @IsArray() @ArrayMaxSize(64) @IsString({ each: true }) @MaxLength(256, { each: true })
  scopes?: string[];

  @ApiPropertyOptional({ description: 'A grant for the whole tenant (used by principals without one of their own); needs connections:manage.' })
  @IsOptional() @IsBoolean()
  shared?: boolean;
}

export class AuthorizeAnswer {
  @ApiProperty({ description: "Where to send the person's browser (the provider's authorization endpoint with state and PKCE challenge)." })
  authorizationUrl: string;
  @ApiProperty() expiresAt: string;
  @ApiProperty({ type: [String] }) scopes: string[];
}

/** The conformance seam's body (the synthetic provider fixture, RFC 0047 §C). */
export class SeamRoundtripBody {
  @ApiProperty() @IsString() @MaxLength(128) provider: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(2048) authUrl?: string;
  @ApiProperty() @IsString() @MaxLength(2048) tokenUrl: string;
  @ApiProperty({ type: [String] }) @IsArray() @ArrayMaxSize(64) @IsString({ each: true }) @MaxLength(256, { each: true }) scopes: string[];
  @ApiProperty() @IsString() @MinLength(1) @MaxLength(2048) authorizationCode: string;
  @ApiProperty() @IsString() @MinLength(1) @MaxLength(2048) state: string;
  @ApiProperty() @IsString() @MinLength(1) @MaxLength(2048) redirectUri: string;
  @ApiProperty() @IsString() @MinLength(43) @MaxLength(128) codeVerifier: string;
  @ApiProperty() @IsString() @MinLength(1) @MaxLength(2048) accessTokenCanary: string;
  @ApiProperty() @IsString() @MinLength(1) @MaxLength(2048) refreshTokenCanary: string;
}
