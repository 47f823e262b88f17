import { DomainError } from '../../platform/errors/domain-error';

/** An unknown webhook id, or one of another tenant or workspace (the two answer alike). */
export class SubscriptionNotFoundError extends DomainError {
  constructor() {
    super('subscription_not_found', 404, 'No such webhook subscription.');
  }
}

/** The SSRF guard refused the subscription URL (webhooks.md §Security). */
export class WebhookUrlRejectedError extends DomainError {
  constructor(reason: string) {
    super('webhook_url_rejected', 400, `The webhook URL is not an allowed delivery target: ${reason}.`, { reason });
  }
}

/** A Standard Webhooks opt-in whose endpoint did not echo the verification challenge (webhooks.md §Standard Webhooks); nothing was persisted. */
export class WebhookEndpointUnverifiedError extends DomainError {
  constructor(reason: string) {
    super('webhook_endpoint_unverified', 400, `The webhook endpoint did not verify: ${reason}.`, { reason });
  }
}
