import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../platform/discovery/capability-advertiser';
import { PortabilityService } from './portability.service';

/**
 * `portability` at the discovery root. `kinds` lists the kinds whose provider exists and whose
 * underlying installer is mounted right now, so it never promises what an import would refuse.
 */
@Advertiser()
@Injectable()
export class PortabilityAdvertiser implements CapabilityAdvertiser {
  readonly scopedBy = { portability: ['portability:export', 'portability:import'] };

  constructor(private readonly portability: PortabilityService) {}

  advertise(): Record<string, unknown> {
    return { portability: { export: true, import: true, dryRun: true, kinds: this.portability.kinds() } };
  }
}
