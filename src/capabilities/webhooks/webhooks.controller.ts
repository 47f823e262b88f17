import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { AnyScope, CurrentPrincipal, Scopes } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { ApiErrors } from '../../platform/openapi/api-errors.decorator';
import { WEBHOOK_MANAGERS } from './webhook-scopes';
import { DeliveriesQuery, RegisterWebhookBody, TenantQuery, WebhookListQuery } from './webhooks.dto';
import { DELIVERY_LIST, WEBHOOK_LIST, WEBHOOK_REGISTRATION, WEBHOOK_VIEW } from './webhooks.openapi';
import { DeliveryView, WebhookRegistration, WebhooksService, WebhookView } from './webhooks.service';

const ID_PARAM = { name: 'webhookId', description: 'The subscription id (wh_<hex>).' };

/** Webhook subscriptions (webhooks.md): register, read, unregister, and the delivery history. */
@ApiTags('webhooks')
@Controller()
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  // A subscription reads run events on the registrant's behalf (runs:read) and has the host call a
  // URL (webhooks:manage, or runs:create, whose callbackUrl on POST /v1/runs already does that).
  @Scopes('runs:read')
  @AnyScope(...WEBHOOK_MANAGERS)
  @Post('/v1/webhooks')
  @ApiOperation({
    operationId: 'registerWebhook',
    summary: 'Register a webhook subscription; the signing secret is returned once',
    description:
      '400 validation_error for a malformed body, 400 webhook_url_rejected when the SSRF guard refuses the URL (not https, private, loopback, link-local or metadata target), 403 when tenantId is not the caller\'s tenant, 409 webhook_limit_reached, 503 credential_store_unavailable.',
  })
  @ApiBody({ type: RegisterWebhookBody })
  @ApiCreatedResponse({ schema: WEBHOOK_REGISTRATION })
  @ApiErrors(400, 401, 403, 409, 503)
  register(@CurrentPrincipal() p: Principal, @Body() body: RegisterWebhookBody): Promise<WebhookRegistration> {
    return this.webhooks.register(p, body);
  }

  @Scopes('webhooks:read')
  @Get('/v1/webhooks')
  @ApiOperation({ operationId: 'listWebhooks', summary: "List the caller's subscriptions (never their secrets)" })
  @ApiOkResponse({ schema: WEBHOOK_LIST })
  @ApiErrors(400, 401, 403)
  async list(@CurrentPrincipal() p: Principal, @Query() q: WebhookListQuery): Promise<{ webhooks: WebhookView[]; nextCursor: string | null }> {
    this.webhooks.assertTenant(p, q.tenantId);
    const page = await this.webhooks.page(p, q);
    return { webhooks: page.items, nextCursor: page.nextCursor };
  }

  @Scopes('webhooks:read')
  @Get('/v1/webhooks/:webhookId')
  @ApiOperation({ operationId: 'getWebhook', summary: 'Read one subscription (never its secret); 404 subscription_not_found' })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ schema: WEBHOOK_VIEW })
  @ApiErrors(400, 401, 403, 404)
  get(@CurrentPrincipal() p: Principal, @Param('webhookId') id: string, @Query() q: TenantQuery): Promise<WebhookView> {
    return this.webhooks.get(p, id, q.tenantId);
  }

  @Scopes()
  @AnyScope(...WEBHOOK_MANAGERS)
  @Delete('/v1/webhooks/:webhookId')
  @HttpCode(204)
  @ApiOperation({ operationId: 'unregisterWebhook', summary: 'Unregister a subscription; its secret and delivery history go with it. 404 subscription_not_found' })
  @ApiParam(ID_PARAM)
  @ApiNoContentResponse({ description: 'Unregistered.' })
  @ApiErrors(400, 401, 403, 404)
  async unregister(@CurrentPrincipal() p: Principal, @Param('webhookId') id: string, @Query() q: TenantQuery): Promise<void> {
    await this.webhooks.unregister(p, id, q.tenantId);
  }

  @Scopes('webhooks:read')
  @Get('/v1/webhooks/:webhookId/deliveries')
  @ApiOperation({ operationId: 'listWebhookDeliveries', summary: 'The delivery history of a subscription, newest first' })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ schema: DELIVERY_LIST })
  @ApiErrors(400, 401, 403, 404)
  async deliveries(@CurrentPrincipal() p: Principal, @Param('webhookId') id: string, @Query() q: DeliveriesQuery): Promise<{ deliveries: DeliveryView[]; nextCursor: string | null }> {
    const page = await this.webhooks.deliveries(p, id, q);
    return { deliveries: page.items, nextCursor: page.nextCursor };
  }
}
