import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../platform/discovery/capability-advertiser';
import { CredentialStoreService } from './credentials/credential-store.service';

/**
 * `connections` (RFC 0095) is served whenever this module is mounted. `credentials` (RFC 0046) is
 * advertised only while credentials can actually be stored (a key is configured): a host on
 * DATABASE_URL without OPENWOP_CREDENTIAL_KEYS serves packs but not credentials.
 */
@Advertiser()
@Injectable()
export class ConnectionsAdvertiser implements CapabilityAdvertiser {
  readonly scopedBy = { connections: ['connections:read', 'connections:manage'], credentials: ['connections:read', 'connections:manage'] };

  constructor(private readonly credentials: CredentialStoreService) {}

  advertise(): Record<string, unknown> {
    const doc: Record<string, unknown> = { connections: { supported: true, packsSupported: true } };
    // rotation "two-key-overlap" (RFC 0046 §D): PUT /v1/connections/{id}/credential keeps the replaced
    // material valid for an overlap window (the reference stays), then it is deleted (ConnectionsService).
    if (this.credentials.available()) doc.credentials = { supported: true, scopes: ['tenant'], encryptionAtRest: true, rotation: 'two-key-overlap' };
    return doc;
  }
}
