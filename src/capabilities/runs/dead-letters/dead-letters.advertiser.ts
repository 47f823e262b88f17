import { Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../../platform/discovery/capability-advertiser';
import { DeadLettersService } from './dead-letters.service';

/** RFC 0053 `deadLetter`: retry-exhausted runs land in the sink, fork-eligible while runs are kept. */
@Injectable()
@Advertiser()
export class DeadLettersAdvertiser implements CapabilityAdvertiser {
  constructor(private readonly letters: DeadLettersService) {}

  advertise(): Record<string, unknown> {
    return { deadLetter: { supported: true, retentionDays: this.letters.retentionDays } };
  }
}
