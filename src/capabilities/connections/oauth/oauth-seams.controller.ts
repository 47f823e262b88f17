import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Scopes, TestSeam } from '../../../platform/identity/decorators';
import type { Principal } from '../../../platform/identity/principal';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { SeamRoundtripBody } from './oauth.dto';
import { OAuthRoundtripSeam } from './oauth-roundtrip.seam';

/** The RFC 0047 conformance seam (`oauth-authorization-code-roundtrip`); only with OPENWOP_TEST_SEAMS=true. */
@ApiTags('connections')
@Controller()
export class OAuthSeamsController {
  constructor(private readonly seam: OAuthRoundtripSeam) {}

  @TestSeam()
  @Scopes('connections:manage')
  @Post('/v1/host/sample/oauth/authorize-code-roundtrip')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamOAuthAuthorizeCodeRoundtrip', summary: "(test seam) Run the authorization-code grant against the synthetic provider's token endpoint stand-in; answers the credential reference and connector.authorized" })
  @ApiBody({ type: SeamRoundtripBody })
  @ApiOkResponse({ schema: { type: 'object', properties: { provider: { type: 'string' }, credentialRef: { type: 'string' }, scopes: { type: 'array', items: { type: 'string' } }, events: { type: 'array', items: { type: 'object' } } } } })
  @ApiErrors(400, 401, 403, 409, 422)
  run(@CurrentPrincipal() p: Principal, @Body() body: SeamRoundtripBody): ReturnType<OAuthRoundtripSeam['run']> {
    return this.seam.run(p, body);
  }
}
