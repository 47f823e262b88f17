import { ApiKeyEntity } from './platform/identity/api-key.entity';
import { EventEntity, EventStreamEntity, RunEntity } from './platform/events/event.entities';
import { InstalledArtifactEntity } from './platform/artifacts/installed-artifact.entity';
import { PluginStateEntity } from './platform/plugins/plugin-state.entity';
import { ScheduledTaskEntity } from './platform/scheduler/scheduled-task.entity';
import { ProposalEntity } from './capabilities/proposals/proposal.entity';
import { ApprovalDecisionEntity, ApprovalEntity } from './capabilities/proposals/approvals/approval.entity';
import { AutomationScheduleEntity } from './capabilities/proposals/automations/automation-schedule.entity';
import { CONNECTIONS_ENTITIES } from './capabilities/connections/connections.entities';
import { GoalEntity, GoalRunEntity } from './capabilities/goals/goal.entity';
import { RunNodeEntity } from './capabilities/runs/run-node.entity';
import { ActivityInvocationEntity, IdempotencyRecordEntity } from './platform/idempotency/idempotency.entities';
import { WEBHOOKS_ENTITIES } from './capabilities/webhooks/webhook.entities';

/** Every entity of the host, listed explicitly (no globs). Capabilities add theirs here. */
export const ENTITIES: Function[] = [
  ApiKeyEntity,
  RunEntity,
  EventStreamEntity,
  EventEntity,
  InstalledArtifactEntity,
  PluginStateEntity,
  ScheduledTaskEntity,
  ProposalEntity,
  ApprovalEntity,
  ApprovalDecisionEntity,
  AutomationScheduleEntity,
  ...CONNECTIONS_ENTITIES,
  GoalEntity,
  GoalRunEntity,
  RunNodeEntity,
  IdempotencyRecordEntity,
  ActivityInvocationEntity,
  ...WEBHOOKS_ENTITIES,
];
