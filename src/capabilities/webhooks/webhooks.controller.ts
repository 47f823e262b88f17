import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { AnyScope, CurrentPrincipal, Scopes } from '../../platform/identity/decorators';
import type { Principal } from '../../platform/identity/principal';
import { ApiErrors } from '../../platform/openapi/api-errors.decorator';
import { WEBHOOK_MANAGERS } from './webhook-scopes';
import { requestMajor } from '../../platform/http/protocol-version';
import { RequestValidationPipe } from '../../platform/http/request-validation.pipe';
import { REQUEST_VALIDATION } from '../../platform/platform.module';
import { DeadLettersQuery, DeliveriesQuery, RegisterWebhookBody, RegisterWebhookV2Body, RotateSecretBody, TenantQuery, WebhookListQuery } from './webhooks.dto';
import { DEAD_LETTER_LIST, DELIVERY_LIST, ROTATION, WEBHOOK_LIST, WEBHOOK_REGISTRATION, WEBHOOK_VIEW } from './webhooks.openapi';
import { DeadLetterView, DeliveryView, RotationView, WebhookRegistration, WebhookRegistrationV2, WebhooksService, WebhookView } from './webhooks.service';
import { bound } from './webhook-v2';

/** The registration body is validated per major: v1's (with `tenantId`) or v2's closed one (`secret`, `signatureAlgorithms`). */
const registrationPipe = new RequestValidationPipe(REQUEST_VALIDATION);

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
  async register(@CurrentPrincipal() p: Principal, @Req() req: { body?: unknown }): Promise<WebhookRegistration | WebhookRegistrationV2> {
    // One handler for both majors (docs/versions.md): major 2 (POST /webhooks) takes the v2 body and answers the v2 registration.
    if (requestMajor(req) === 2) {
      const body = (await registrationPipe.transform(req.body, { type: 'body', metatype: RegisterWebhookV2Body })) as RegisterWebhookV2Body;
      return this.webhooks.registerV2(p, body);
    }
    const body = (await registrationPipe.transform(req.body, { type: 'body', metatype: RegisterWebhookBody })) as RegisterWebhookBody;
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

  @Scopes()
  @AnyScope(...WEBHOOK_MANAGERS)
  @Post('/v1/webhooks/:webhookId/rotate-secret')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'rotateWebhookSecret',
    summary: 'Rotate the secret of a subscription that opted into standard-webhooks-1; the previous secret signs beside the new one for the overlap',
    description: '400 validation_error when the subscription did not opt in or the secret is not whsec_ of 24-64 bytes; 404 subscription_not_found (not_found at major 2); 403 id_tenant_mismatch for an id bound to another tenant (major 2). No secret is answered.',
  })
  @ApiParam(ID_PARAM)
  @ApiBody({ type: RotateSecretBody })
  @ApiOkResponse({ schema: ROTATION })
  @ApiErrors(400, 401, 403, 404)
  async rotate(@CurrentPrincipal() p: Principal, @Param('webhookId') id: string, @Body() body: RotateSecretBody, @Req() req: object): Promise<RotationView> {
    const r = await this.webhooks.rotateSecret(p, id, body.secret);
    return requestMajor(req) === 2 ? { ...r, webhookId: bound(p.tenant, r.webhookId) } : r;
  }

  @Scopes('webhooks:read')
  @Get('/v1/webhooks/:webhookId/dead-letters')
  @ApiOperation({
    operationId: 'listWebhookDeadLetters',
    summary: 'The deliveries of a subscription whose retries were exhausted, newest first (never their body, headers or the secret)',
    description: '404 subscription_not_found (not_found at major 2) for an unknown or unregistered subscription. At most 100 records a page.',
  })
  @ApiParam(ID_PARAM)
  @ApiOkResponse({ schema: DEAD_LETTER_LIST })
  @ApiErrors(400, 401, 403, 404)
  async deadLetters(@CurrentPrincipal() p: Principal, @Param('webhookId') id: string, @Query() q: DeadLettersQuery, @Req() req: object): Promise<{ deliveries: DeadLetterView[]; nextCursor: string | null }> {
    const page = await this.webhooks.deadLetters(p, id, q);
    const v2 = requestMajor(req) === 2;
    const deliveries = v2 ? page.items.map((d) => ({ ...d, deliveryId: bound(p.tenant, d.deliveryId), webhookId: bound(p.tenant, d.webhookId), runId: bound(p.tenant, d.runId) })) : page.items;
    return { deliveries, nextCursor: page.nextCursor };
  }
}
