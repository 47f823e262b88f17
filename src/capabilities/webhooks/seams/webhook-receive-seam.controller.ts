import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Scopes, TestSeam } from '../../../platform/identity/decorators';
import { ApiErrors } from '../../../platform/openapi/api-errors.decorator';
import { WebhookReceiveBody } from '../webhooks.dto';
import { verifyV1 } from '../webhook-signing';

/**
 * The reference-host seam `POST /v1/host/sample/webhooks/receive` (`/conformance/seams/sample/webhooks/receive`
 * at major 2; seams-v2 `receiveWebhookDelivery`, RFC 0176 §D.2): runs a delivery through the host's
 * own scheme-`v1` verifier (`verifyV1`, the recipe a subscriber follows) with `secret` as the
 * subscription secret, and reports the verdict. A delivery carrying only the `X-openwop-*` family is
 * accepted like one with the `OpenWOP-*` family; a wrong signature, a stale timestamp or an unknown
 * algorithm is refused with its reason. Seams on only.
 */
@ApiTags('test-seams')
@Controller()
export class WebhookReceiveSeamController {
  @TestSeam()
  @Scopes('runs:read')
  @Post('/v1/host/sample/webhooks/receive')
  @HttpCode(200)
  @ApiOperation({ operationId: 'seamReceiveWebhookDelivery', summary: "(test seam) Verify a webhook delivery (scheme v1) with the host's verifier: {accepted, reason?}" })
  @ApiBody({ type: WebhookReceiveBody })
  @ApiOkResponse({ schema: { type: 'object', required: ['accepted'], properties: { accepted: { type: 'boolean' }, reason: { type: 'string' } } } })
  @ApiErrors(400, 401, 403, 404)
  receive(@Body() body: WebhookReceiveBody): { accepted: boolean; reason?: string } {
    return verifyV1(body.secret, body.headers, body.body);
  }
}
