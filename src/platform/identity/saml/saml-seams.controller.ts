import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsArray, IsIn, IsOptional, IsString, Matches, MaxLength, MinLength } from '../../http/dto-validation';
import type { FastifyReply } from 'fastify';
import { ApiErrors } from '../../openapi/api-errors.decorator';
import { CurrentPrincipal, Scopes, TestSeam } from '../decorators';
import { Principal } from '../principal';
import { SubjectLinkSeams } from './subject-link-seams.service';

class SamlValidateBody {
  @ApiProperty({ description: 'The synthetic identity provider: the origin (or a prefix) of the SSO URL of a provider the caller\'s tenant trusts.' })
  @IsString()
  @MaxLength(2048)
  idpUrl!: string;

  @ApiProperty({ description: 'The response the synthetic provider is asked for (`valid`, or a defect it can mint: `bad-signature`, `wrong-audience`, `expired`, `email-name-id`, ...).' })
  @IsString()
  @Matches(/^[a-z][a-z0-9-]{0,63}$/)
  variant!: string;

  @ApiProperty({ description: 'The subject the provider asserts (its persistent NameID).' })
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  nameId!: string;

  @ApiPropertyOptional({ description: 'Groups the provider asserts.', type: [String] })
  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  @MaxLength(256, { each: true })
  groups?: string[];
}

class ScimProvisionBody {
  @ApiProperty({ description: 'The SCIM 2.0 base URL of this host\'s directory (`…/scim/v2`); the seam provisions the caller\'s tenant there.' })
  @IsString()
  @MaxLength(2048)
  scimUrl!: string;

  @ApiProperty({ enum: ['create-user', 'deactivate-user', 'link'] })
  @IsIn(['create-user', 'deactivate-user', 'link'])
  op!: 'create-user' | 'deactivate-user' | 'link';

  @ApiPropertyOptional({ description: 'The subject the identity provider asserts for the user (its opaque persistent NameID): the link key.' })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  externalId?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(256)
  userName?: string;

  @ApiPropertyOptional({ description: 'The identity provider feeding the directory (must be the tenant\'s SCIM provider).' })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  idpUrl?: string;

  @ApiPropertyOptional({ description: '`link` only: the key to link on. Mutable or personal keys (email, userName) are refused.' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  linkKey?: string;

  @ApiPropertyOptional({ description: 'Never a link key: present only to be refused.' })
  @IsOptional()
  @IsString()
  @MaxLength(320)
  email?: string;
}

const OUTCOME = {
  type: 'object',
  required: ['authenticated', 'tenant', 'idp', 'linkedDenied'],
  properties: {
    authenticated: { type: 'boolean' },
    tenant: { type: 'string' },
    idp: { type: 'string' },
    principal: { type: 'string' },
    linked: { type: 'boolean' },
    reason: { type: 'string' },
    linkedDenied: { type: 'boolean', description: 'true when a linked SCIM user\'s deactivation denied the subject' },
  },
};

/**
 * The subject-linking seams (host-sample-test-seams.md; auth-subject-link, auth-subject-link-key-class):
 * `auth/saml/validate` runs a real SP-initiated sign-in against a synthetic identity provider the
 * caller's tenant trusts and reports the host's decision; `auth/scim/provision` provisions or
 * deactivates a user of the caller's tenant's SCIM directory the way its identity provider would.
 */
@ApiTags('keys')
@Controller()
export class SamlSeamsController {
  constructor(private readonly seams: SubjectLinkSeams) {}

  @TestSeam()
  @Scopes('audit:read')
  @Post('/v1/host/sample/auth/saml/validate')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamSamlValidate', summary: '(test seam) A SAML sign-in at a synthetic provider of the caller\'s tenant: {authenticated, principal?, reason?, linkedDenied}' })
  @ApiBody({ type: SamlValidateBody })
  @ApiOkResponse({ schema: OUTCOME })
  @ApiErrors(400, 401, 403, 404)
  async validate(@CurrentPrincipal() p: Principal, @Body() body: SamlValidateBody): Promise<Record<string, unknown>> {
    return this.seams.validate(p, body);
  }

  @TestSeam()
  @Scopes('audit:read')
  @Post('/v1/host/sample/auth/scim/provision')
  @ApiOperation({ operationId: 'seamScimProvision', summary: '(test seam) Provision (201) or deactivate (200) a SCIM user of the caller\'s tenant; links on mutable keys are refused (400)' })
  @ApiBody({ type: ScimProvisionBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['op', 'user'], properties: { op: { type: 'string' }, user: { type: 'object' } } } })
  @ApiErrors(400, 401, 403, 404)
  async provision(@CurrentPrincipal() p: Principal, @Body() body: ScimProvisionBody, @Res({ passthrough: true }) reply: FastifyReply): Promise<Record<string, unknown>> {
    const { status, body: out } = await this.seams.provision(p, body);
    void reply.status(status);
    return out;
  }
}
