import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../../platform/discovery/capability-advertiser';
import { CredentialStoreService } from '../credentials/credential-store.service';
import { OAuthProviderClient } from './oauth-provider-client';

/**
 * `oauth` (RFC 0047): advertised while the host has a callback URL, at least one OAuth client and a credential key
 * to seal tokens with. `providers` are the provider ids the host holds a client registration for.
 */
@Advertiser()
@Injectable()
export class OAuthAdvertiser implements CapabilityAdvertiser {
  readonly scopedBy = { oauth: ['connections:read', 'connections:manage'] };

  constructor(
    private readonly client: OAuthProviderClient,
    private readonly credentials: CredentialStoreService,
  ) {}

  advertise(): Record<string, unknown> {
    if (!this.client.enabled() || !this.credentials.available()) return {};
    const providers = Object.keys(this.client.settings.clients).sort().map((id) => ({ id }));
    return { oauth: { supported: true, grants: ['authorization_code', 'refresh_token'], providers } };
  }
}
