import { Inject, Module, OnModuleInit } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { PeriodicTaskService } from '../../platform/scheduler/periodic-task.service';
import { ConnectionChangeNotifier } from './connection-change-notifier';
import { ConnectionsAdvertiser } from './connections.advertiser';
import { connectionsSettings } from './connections.settings';
import { ConnectionsController } from './connections/connections.controller';
import { ConnectionsService } from './connections/connections.service';
import { ConfigCredentialKeyProvider } from './credentials/config-key-provider';
import { CredentialStoreService } from './credentials/credential-store.service';
import { CredentialedEgressService } from './egress/credentialed-egress.service';
import { BuiltinProviderRegistry } from './packs/builtin-provider-registry.service';
import { HostBuiltinConnectionProviders } from './packs/builtin-providers';
import { ConnectionPackInstaller } from './packs/connection-pack.installer';
import { ConnectionPacksController } from './packs/connection-packs.controller';
import { ConnectionPacksService } from './packs/connection-packs.service';
import { ProviderRefusals, ProviderRegistryService } from './packs/provider-registry';
import { ProviderRegistryController } from './packs/provider-registry.controller';
import { ConnectionRefPortableKind } from './portability/connection-ref.portable-kind';
import { ConnectionPackSeamsController } from './seams/connection-pack-seams.controller';
import { CredentialEchoService } from './seams/credential-echo.service';
import { ConnectorToolSource } from './tools/connector-tool.source';
import { CONNECTIONS_ENTITIES } from './connections.entities';
import { OAuthAdvertiser } from './oauth/oauth.advertiser';
import { OAuthController } from './oauth/oauth.controller';
import { OAuthProviderClient } from './oauth/oauth-provider-client';
import { OAuthService } from './oauth/oauth.service';
import { OAuthRoundtripSeam } from './oauth/oauth-roundtrip.seam';
import { OAuthSeamsController } from './oauth/oauth-seams.controller';

/**
 * Connections (RFC 0095 connection packs, RFC 0046 credentials): pack install and provider
 * resolution, tenant connections with encrypted write-only credentials, the `connector` tool
 * source and the `connection-ref` portable kind.
 */
@Module({
  imports: [DiscoveryModule],
  controllers: [ConnectionPacksController, ConnectionsController, ConnectionPackSeamsController, ProviderRegistryController, OAuthController, OAuthSeamsController],
  providers: [
    ConnectionChangeNotifier,
    BuiltinProviderRegistry,
    HostBuiltinConnectionProviders,
    ConnectionPackInstaller,
    ConnectionPacksService,
    ProviderRefusals,
    ProviderRegistryService,
    ConfigCredentialKeyProvider,
    CredentialStoreService,
    ConnectionsService,
    ConnectionsAdvertiser,
    ConnectorToolSource,
    ConnectionRefPortableKind,
    CredentialEchoService,
    OAuthProviderClient,
    OAuthService,
    OAuthAdvertiser,
    OAuthRoundtripSeam,
    CredentialedEgressService,
  ],
  exports: [ConnectionsService, ConnectionPacksService, CredentialStoreService, OAuthService, CredentialedEgressService, ConnectionChangeNotifier],
})
export class ConnectionsModule implements OnModuleInit {
  static readonly entities = CONNECTIONS_ENTITIES;

  constructor(
    private readonly tasks: PeriodicTaskService,
    private readonly credentials: CredentialStoreService,
    private readonly oauth: OAuthService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  onModuleInit(): void {
    // After a key rotation (a new first key in OPENWOP_CREDENTIAL_KEYS), credentials sealed under
    // older keys are re-sealed in the background, once per slot across replicas.
    this.tasks.register({
      name: 'connections.credential-reseal',
      intervalMs: connectionsSettings(this.config).resealIntervalMs,
      run: async (signal) => {
        // Batches until one comes back short (done, or only credentials whose old key is gone).
        while (!signal.aborted && (await this.credentials.resealStale(100)) === 100);
      },
    });
    // Authorizations nobody came back from (RFC 0047): their state hash and sealed verifier go after their TTL.
    this.tasks.register({
      name: 'connections.oauth-authorization-sweep',
      intervalMs: 600_000,
      run: async (signal) => {
        while (!signal.aborted && (await this.oauth.sweepExpired(500)) === 500);
      },
    });
  }
}
