import { Module } from '@nestjs/common';
import { ConnectionsModule } from '../connections/connections.module';
import { WebhookDispatcherService } from './webhook-dispatcher.service';
import { WebhooksAdvertiser } from './webhooks.advertiser';
import { WebhooksController } from './webhooks.controller';
import { WebhooksService } from './webhooks.service';
import { WebhookSurfaceSeamController } from './seams/webhook-surface-seam.controller';

/**
 * Webhooks (webhooks.md): tenant-scoped subscriptions with secrets sealed in the credential store,
 * a transactional delivery outbox filled from the event log, and a replica-safe delivery worker
 * that signs (v1), re-validates targets and retries with backoff.
 */
@Module({
  imports: [ConnectionsModule],
  controllers: [WebhooksController, WebhookSurfaceSeamController],
  providers: [WebhooksService, WebhookDispatcherService, WebhooksAdvertiser],
  exports: [WebhooksService],
})
export class WebhooksModule {}
