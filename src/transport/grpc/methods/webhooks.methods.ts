import { Injectable } from '@nestjs/common';
import { RegisterWebhookBody, WebhooksController, WebhooksService } from '../../../capabilities/webhooks';
import { EngineCall, EngineMethod, UnaryEngineMethod } from '../engine-method';
import type { JsonObject } from '../json-struct';

/**
 * Webhook subscriptions over gRPC, through WebhooksService. Both twins require, besides their
 * @Scopes, one of WEBHOOK_MANAGERS (`@AnyScope`): the guard runs against the REST route, so that
 * any-of rule is REST's own. The request messages carry no tenantId: the caller's tenant, REST's
 * default.
 */

/** RegisterWebhook: `POST /v1/webhooks`; the answer (secret included, once) rides beside webhook_id in additional_properties. */
@Injectable()
@EngineMethod()
export class RegisterWebhookMethod implements UnaryEngineMethod {
  readonly name = 'RegisterWebhook';
  readonly kind = 'unary';
  readonly rest = { controller: WebhooksController, handler: 'register' };

  constructor(private readonly webhooks: WebhooksService) {}

  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    const body = await call.validate(RegisterWebhookBody, request, 'body');
    return this.webhooks.register(call.requirePrincipal(), body);
  }
}

/** UnregisterWebhook: `DELETE /v1/webhooks/{webhookId}`; REST's 204 is google.protobuf.Empty. */
@Injectable()
@EngineMethod()
export class UnregisterWebhookMethod implements UnaryEngineMethod {
  readonly name = 'UnregisterWebhook';
  readonly kind = 'unary';
  readonly rest = { controller: WebhooksController, handler: 'unregister' };

  constructor(private readonly webhooks: WebhooksService) {}

  async handle(call: EngineCall, request: JsonObject): Promise<unknown> {
    await this.webhooks.unregister(call.requirePrincipal(), typeof request.webhookId === 'string' ? request.webhookId : '');
    return {};
  }
}
