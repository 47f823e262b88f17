/** The connections capability as other capabilities see it: its module and its services. */
export { ConnectionsModule } from './connections.module';
export { ConnectionsService } from './connections/connections.service';
export { ConnectionPacksService } from './packs/connection-packs.service';
export { CredentialStoreService } from './credentials/credential-store.service';
export { CredentialedEgressService } from './egress/credentialed-egress.service';
export type { EgressCredential, EgressDecided } from './egress/credentialed-egress.service';
export { OAuthService } from './oauth/oauth.service';
export { ConnectionChangeNotifier } from './connection-change-notifier';
