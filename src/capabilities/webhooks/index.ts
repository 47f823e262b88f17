/** The webhooks capability as other capabilities and the transports see it. */
// Its module and its service.
export { WebhooksModule } from './webhooks.module';
export { WebhooksService } from './webhooks.service';
// For the transports (gRPC): the REST request DTO a method validates with, and the REST route a
// gRPC method names as its twin (its scopes are read from the controller's route metadata).
export { RegisterWebhookBody } from './webhooks.dto';
export { WebhooksController } from './webhooks.controller';
