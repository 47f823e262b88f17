import { Inject, Injectable } from '@nestjs/common';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { Advertiser, CapabilityAdvertiser } from '../discovery/capability-advertiser';
import { ForceExpireListener } from './force-expire.listener';

/**
 * `production.retention` (production-profile.md §"Event retention"): finished runs, their snapshots
 * and their events are kept OPENWOP_RUN_RETENTION_DAYS (at least 7) after they end, then deleted by
 * the retention sweep; a run read after that answers the canonical `404 not_found` (the sweep keeps
 * no tombstones, so expiry and "never existed" look alike, which the profile allows).
 * `testForceExpire: true` only while the force-expire test seam is listening (./force-expire.listener.ts).
 */
@Injectable()
@Advertiser()
export class RetentionAdvertiser implements CapabilityAdvertiser {
  constructor(
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
    private readonly forceExpire: ForceExpireListener,
  ) {}

  advertise(): Record<string, unknown> {
    const seam = this.forceExpire.port !== undefined ? { testForceExpire: true } : {};
    return { production: { supported: true, retention: { supported: true, minWindowSeconds: this.config.retention.runDays * 86_400, ...seam } } };
  }
}
