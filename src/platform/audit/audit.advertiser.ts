import { Injectable, Logger } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../discovery/capability-advertiser';
import { AuditLogService } from './audit-log.service';

export const AUDIT_PROFILE = 'openwop-audit-log-integrity';

/**
 * `auth.auditLogIntegrity` (auth-profiles.md §"Capability advertisement"); the profile id itself is
 * listed in `auth.profiles` by AuthProfilesAdvertiser (src/platform/identity), the list's one author,
 * under the same condition. The public key is read with the signing key at first use; while the
 * database cannot give it, the claim is left out rather than advertised without a key.
 */
@Injectable()
@Advertiser()
export class AuditAdvertiser implements CapabilityAdvertiser {
  private readonly logger = new Logger('audit');

  constructor(private readonly audit: AuditLogService) {}

  async advertise(): Promise<Record<string, unknown> | undefined> {
    let checkpointPublicKey: string;
    try {
      checkpointPublicKey = await this.audit.publicKeySpki();
    } catch (e) {
      this.logger.warn({ msg: 'audit signing key unavailable: the audit-log-integrity claim is left out of discovery', err: e });
      return undefined;
    }
    return {
      auth: {
        auditLogIntegrity: {
          hashChain: true,
          checkpointSignatureAlgorithm: 'ed25519',
          checkpointPublicKey,
          checkpointIntervalEntries: this.audit.checkpointIntervalEntries,
          checkpointIntervalSeconds: this.audit.checkpointIntervalSeconds,
        },
      },
    };
  }
}
