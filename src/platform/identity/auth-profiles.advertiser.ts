import { Inject, Injectable } from '@nestjs/common';
import { AUDIT_PROFILE } from '../audit/audit.advertiser';
import { AuditLogService } from '../audit/audit-log.service';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { Advertiser, CapabilityAdvertiser } from '../discovery/capability-advertiser';

export const KEY_ROTATION_PROFILE = 'openwop-auth-api-key-rotation';

/**
 * `auth.profiles` (auth-profiles.md), in one place: the discovery document merges advertisers deeply
 * but replaces arrays, so the profiles list has one author. It names
 *
 * - `openwop-audit-log-integrity` while the audit log's signing key can be read (the same condition
 *   under which AuditAdvertiser advertises `auth.auditLogIntegrity`);
 * - `openwop-auth-api-key-rotation` with `auth.rotation {supported, minGraceSeconds}`: `POST
 *   /v1/keys/{id}/rotate` mints a successor bound to the same tenant, workspace and principal, both
 *   keys authenticate during the overlap, the old one is refused after it (401, as an expired key),
 *   and `key.created`, `key.rotated`, `key.used` and `key.revoked` are audited. Every rotation's
 *   overlap is at least OPENWOP_KEY_ROTATION_MIN_OVERLAP_S, the advertised minimum grace.
 */
@Injectable()
@Advertiser()
export class AuthProfilesAdvertiser implements CapabilityAdvertiser {
  constructor(
    private readonly audit: AuditLogService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  async advertise(): Promise<Record<string, unknown>> {
    const auditSigned = await this.audit.publicKeySpki().then(() => true, () => false);
    return {
      auth: {
        profiles: [...(auditSigned ? [AUDIT_PROFILE] : []), KEY_ROTATION_PROFILE],
        rotation: { supported: true, minGraceSeconds: this.config.keyRotation.minOverlapS },
      },
    };
  }
}
