import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../openapi/api-errors.decorator';
import { CurrentPrincipal, Scopes } from './decorators';
import { Principal } from './principal';

interface WhoAmIView {
  tenant: string;
  workspace?: string;
  principal: string;
  kind: 'api-key' | 'jwt';
  scopes: string[];
}

/**
 * Who the presented credential is and what it may do, so a client (the operator console) can show
 * only the actions the credential's scopes allow. Any valid credential may ask; it learns only about
 * itself, never about other keys.
 */
@ApiTags('identity')
@Controller()
export class WhoAmIController {
  @Scopes()
  @Get('/v1/whoami')
  @ApiOperation({ operationId: 'whoAmI', summary: 'The caller’s tenant, workspace, principal and scopes (roles expanded)' })
  @ApiOkResponse({
    schema: {
      type: 'object',
      additionalProperties: false,
      required: ['tenant', 'principal', 'kind', 'scopes'],
      properties: {
        tenant: { type: 'string' },
        workspace: { type: 'string' },
        principal: { type: 'string' },
        kind: { type: 'string', enum: ['api-key', 'jwt'] },
        scopes: { type: 'array', items: { type: 'string' }, description: 'Every scope the credential holds, roles expanded, sorted.' },
      },
    },
  })
  @ApiErrors(401)
  whoami(@CurrentPrincipal() p: Principal): WhoAmIView {
    return {
      tenant: p.tenant,
      ...(p.workspace ? { workspace: p.workspace } : {}),
      principal: p.principal,
      kind: p.kind === 'jwt' ? 'jwt' : 'api-key',
      scopes: [...p.scopes].sort(),
    };
  }
}
