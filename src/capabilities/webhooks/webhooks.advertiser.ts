import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../platform/discovery/capability-advertiser';
import { SIGNATURE_ALGORITHM, WebhooksService } from './webhooks.service';

/**
 * `webhooks {supported, signatureAlgorithms}` (webhooks.md, capabilities.schema.json). Advertised
 * only while subscriptions can be registered: their signing secrets need the credential store.
 * Delivery is retried with backoff, which the best-effort contract allows; `durable` (the RFC 0083
 * trigger-bridge mode) is not claimed.
 */
@Injectable()
@Advertiser()
export class WebhooksAdvertiser implements CapabilityAdvertiser {
  readonly scopedBy = { webhooks: ['webhooks:read', 'webhooks:manage', 'runs:create'] };

  constructor(private readonly webhooks: WebhooksService) {}

  advertise(): Record<string, unknown> | undefined {
    if (!this.webhooks.available()) return undefined;
    return { webhooks: { supported: true, signatureAlgorithms: [SIGNATURE_ALGORITHM] } };
  }
}
