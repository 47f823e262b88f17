import { Inject, Module, OnModuleInit } from '@nestjs/common';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { PeriodicTaskService } from '../../platform/scheduler/periodic-task.service';
import { ConnectionsModule } from '../connections';
import { WebhookDispatcherService } from './webhook-dispatcher.service';
import { WebhooksAdvertiser } from './webhooks.advertiser';
import { WebhooksController } from './webhooks.controller';
import { WebhooksService } from './webhooks.service';
import { WebhookSurfaceSeamController } from './seams/webhook-surface-seam.controller';
import { WebhookReceiveSeamController } from './seams/webhook-receive-seam.controller';
import { WEBHOOKS_ENTITIES } from './webhook.entities';
import { provideWebhooksV2Facets } from '../../platform/discovery/v2-records/webhooks';
import { DEAD_LETTER_PAGE } from './webhooks.service';

/**
 * Webhooks (webhooks.md): tenant-scoped subscriptions with secrets sealed in the credential store,
 * a transactional delivery outbox filled from the event log, and a replica-safe delivery worker
 * that signs (v1), re-validates targets and retries with backoff.
 */
@Module({
  imports: [ConnectionsModule],
  controllers: [WebhooksController, WebhookSurfaceSeamController, WebhookReceiveSeamController],
  providers: [WebhooksService, WebhookDispatcherService, WebhooksAdvertiser],
  exports: [WebhooksService],
})
export class WebhooksModule implements OnModuleInit {
  static readonly entities = WEBHOOKS_ENTITIES;

  constructor(
    private readonly tasks: PeriodicTaskService,
    private readonly dispatcher: WebhookDispatcherService,
    private readonly webhooks: WebhooksService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  onModuleInit(): void {
    // What the v2 `webhooks` record advertises: the retry policy deliveries follow, the dead-letter
    // read's retention and page ceiling, and the rotation overlap.
    const w = this.config.webhooks;
    provideWebhooksV2Facets({
      retryPolicy: { maxAttempts: w.maxAttempts, backoff: 'exponential' },
      deadLetter: { retentionDays: w.historyDays, maxPageSize: DEAD_LETTER_PAGE },
      secretRotation: { overlapSeconds: w.rotationOverlapSeconds },
    });
    // The delivery history is kept for OPENWOP_WEBHOOK_HISTORY_DAYS, pruned hourly by one replica.
    this.tasks.register({
      name: 'webhooks.history-prune',
      intervalMs: 3600_000,
      run: async (signal) => {
        while (!signal.aborted && (await this.dispatcher.pruneHistory(1000)) === 1000);
      },
    });
    // A rotated-out secret is kept sealed only while its overlap lasts (deliveries stop using it at once).
    this.tasks.register({
      name: 'webhooks.rotated-secrets',
      intervalMs: 3600_000,
      run: async (signal) => {
        while (!signal.aborted && (await this.webhooks.retireRotatedSecrets(100)) === 100);
      },
    });
  }
}
