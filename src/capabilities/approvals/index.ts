/** The approvals capability as other capabilities see it: its module, its service and the types of its calls. */
export { ApprovalsModule } from './approvals.module';
export { ApprovalsService } from './approvals.service';
export type { ApprovalState, ApprovalView, DecisionOptions, GateRequest, GateSubject, InterruptKind, RejectionPolicy } from './approvals.service';
export type { ApprovalEntity } from './approval.entity';
export type { GateRequirements } from './approval-gate-rules';
// For the gRPC transport's ListApprovals: the REST route it is the twin of, and that route's query DTO.
export { ApprovalsController } from './approvals.controller';
export { ApprovalListQuery } from './approvals.dto';
