/** The webhooks capability as other capabilities see it: its module and its service. */
export { WebhooksModule } from './webhooks.module';
export { WebhooksService } from './webhooks.service';
