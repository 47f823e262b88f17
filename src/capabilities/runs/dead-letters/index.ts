import { DeadLetterSeamController } from './dead-letter-seam.controller';
import { DeadLettersAdvertiser } from './dead-letters.advertiser';
import { DeadLettersController } from './dead-letters.controller';
import { DeadLettersService } from './dead-letters.service';

/** RFC 0053 run dead letters (registered by RunsModule): the sink and its API, the advertisement, the exhaust seam. */
export const DEAD_LETTER_CONTROLLERS = [DeadLettersController, DeadLetterSeamController];
export const DEAD_LETTER_PROVIDERS = [DeadLettersService, DeadLettersAdvertiser];
