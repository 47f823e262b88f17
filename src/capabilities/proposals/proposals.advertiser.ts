import { Inject, Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../platform/discovery/capability-advertiser';
import { ProposalsService } from './proposals.service';
import { PROPOSALS_SETTINGS, ProposalsSettings } from './proposals.settings';
import { MAX_FUTURE_HORIZON } from './automations/automation-spec';

/**
 * `agents.proposals`: advertised whenever this module is mounted (its routes are served, and only
 * then are `proposal.*` events emitted). `artifactKinds` lists the kinds an installer can apply now.
 */
@Injectable()
@Advertiser()
export class ProposalsAdvertiser implements CapabilityAdvertiser {
  readonly scopedBy = { 'agents.proposals': ['proposals:read', 'proposals:propose', 'proposals:review', 'packs:publish'] };

  constructor(
    private readonly proposals: ProposalsService,
    @Inject(PROPOSALS_SETTINGS) private readonly settings: ProposalsSettings,
  ) {}

  advertise(): Record<string, unknown> {
    return {
      agents: {
        proposals: {
          artifactKinds: this.proposals.installableKinds(),
          duplicationDetection: true,
          activation: this.settings.activation,
        },
      },
      // RFC 0052: installed automations fire on their cron (or interval) slots, each slot once
      // (claimed rows, a key per slot), a backlog of missed slots collapsed into one firing; no
      // one-off delayed runs and no calendar rules; a schedule whose next slot is past the horizon is refused.
      scheduling: { supported: true, cron: true, delayed: false, calendar: false, maxFutureHorizon: MAX_FUTURE_HORIZON },
    };
  }
}
