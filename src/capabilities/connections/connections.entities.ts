import { ConnectionEntity } from './connections/connection.entity';
import { CredentialEntity } from './credentials/credential.entity';
import { ConnectionProviderClaimEntity } from './packs/connection-provider-claim.entity';
import { OAuthAuthorizationEntity, OAuthGrantEntity } from './oauth/oauth.entities';

/** The entities of the connections capability (declared by ConnectionsModule.entities). */
export const CONNECTIONS_ENTITIES = [ConnectionProviderClaimEntity, ConnectionEntity, CredentialEntity, OAuthAuthorizationEntity, OAuthGrantEntity];
