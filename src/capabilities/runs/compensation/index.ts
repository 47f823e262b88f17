import { CompensationAdvertiser } from './compensation.advertiser';
import { CompensationSeamController } from './compensation-seam.controller';
import { CompensationService } from './compensation.service';
import { CoreConformanceChargeExecutor, CoreConformanceRefundExecutor } from './compensation-sample.executors';
import { RunCompensationEntity } from './run-compensation.entity';

/** RFC 0151 compensation: the service, the advertisement, the §21 seams and their sample nodes (registered by RunsModule). */
export const COMPENSATION_CONTROLLERS = [CompensationSeamController];
export const COMPENSATION_PROVIDERS = [CompensationService, CompensationAdvertiser, CoreConformanceChargeExecutor, CoreConformanceRefundExecutor];
export const COMPENSATION_ENTITIES = [RunCompensationEntity];
export { CompensationService };
