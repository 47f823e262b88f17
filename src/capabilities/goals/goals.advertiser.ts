import { Inject, Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../platform/discovery/capability-advertiser';
import { GOALS_SETTINGS, GoalsSettings } from './goals.settings';
import { GoalsService } from './goals.service';

/**
 * `agents.goals` and the host limits goal bounds are clamped to. Continuation modes are what is
 * actually wired: `manual` always, `schedule` and `commitment` only while a goal worker is available,
 * `heartbeat` only while one has a heartbeat predicate.
 */
@Injectable()
@Advertiser()
export class GoalsAdvertiser implements CapabilityAdvertiser {
  readonly scopedBy = { 'agents.goals': ['goals:read', 'goals:write'] };

  constructor(
    private readonly goals: GoalsService,
    @Inject(GOALS_SETTINGS) private readonly settings: GoalsSettings,
  ) {}

  advertise(): Record<string, unknown> {
    return {
      agents: {
        goals: { judge: this.settings.judge, continuation: this.goals.servedModes(), requiresBounds: this.settings.requiresBounds },
      },
      limits: { ...this.settings.limits },
    };
  }
}
