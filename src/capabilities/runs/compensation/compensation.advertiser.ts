import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../../platform/discovery/capability-advertiser';
import { ORDERING_MODELS, PROFILE_VERSION } from './compensation-declaration';

/**
 * RFC 0151 §A `compensation`: the host orders, persists and retries the unwind of a workflow's declared
 * inverse actions (reverse completion order), and holds a plan for an operator (`manualIntervention`)
 * when the policy says so. Every run snapshot carries `compensationStatus`.
 */
@Injectable()
@Advertiser()
export class CompensationAdvertiser implements CapabilityAdvertiser {
  advertise(): Record<string, unknown> {
    return { compensation: { supported: true, profileVersion: PROFILE_VERSION, orderingModels: [...ORDERING_MODELS], manualIntervention: true } };
  }
}
