/** The approvals capability as other capabilities see it: its module, its service and the types of its calls. */
export { ApprovalsModule } from './approvals.module';
export { ApprovalsService } from './approvals.service';
export type { ApprovalState, ApprovalView, DecisionOptions, GateRequest, GateSubject, InterruptKind, RejectionPolicy } from './approvals.service';
export type { ApprovalEntity } from './approval.entity';
