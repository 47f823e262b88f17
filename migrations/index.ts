import type { MigrationClass } from '../src/platform/database/migration-runner';
import { Platform1764680000000 } from './1764680000000-platform';
import { Proposals1764710000000 } from './1764710000000-proposals';
import { Connections1764700000000 } from './1764700000000-connections';
import { Goals1764720000000 } from './1764720000000-goals';
import { GoalSchedulerHotUpdates1764830000000 } from './1764830000000-goal-scheduler-hot-updates';
import { GoalContinuationArms1764830000001 } from './1764830000001-goal-continuation-arms';
import { GoalWorkflow1764830000002 } from './1764830000002-goal-workflow';
import { Runs1764840000000 } from './1764840000000-runs';
import { RunClaimOrder1764850000000 } from './1764850000000-run-claim-order';
import { Delegation1764860000000 } from './1764860000000-delegation';
import { WorkspaceIdempotency1764870000000 } from './1764870000000-workspace-idempotency';
import { ApprovalSubjectFacts1764880000000 } from './1764880000000-approval-subject-facts';
import { RunTraceContext1764895000000 } from './1764895000000-run-trace-context';
import { Interrupts1764900000000 } from './1764900000000-interrupts';
import { Webhooks1764910000000 } from './1764910000000-webhooks';
import { RunSurface1764920000000 } from './1764920000000-run-surface';
import { HostIdempotencyKeyspace1764920000001 } from './1764920000001-host-idempotency-keyspace';
import { ReplayForkFanout1764930000000 } from './1764930000000-replay-fork-fanout';
import { AuditLog1764940000000 } from './1764940000000-audit-log';
import { ChainCatalogVersion1764950000000 } from './1764950000000-chain-catalog-version';
import { RunFollowedUntil1764950000001 } from './1764950000001-run-followed-until';
import { RunArtifacts1764960000000 } from './1764960000000-run-artifacts';
import { RunWriteVolume1764970000000 } from './1764970000000-run-write-volume';
import { ApprovalVoters1764980000000 } from './1764980000000-approval-voters';
import { AuditCheckpointExport1764980000001 } from './1764980000001-audit-checkpoint-export';

/** The migrations, in the order they run. Append only; a landed migration is never edited. */
export const MIGRATIONS: MigrationClass[] = [Platform1764680000000, Proposals1764710000000, Connections1764700000000, Goals1764720000000, GoalSchedulerHotUpdates1764830000000, GoalContinuationArms1764830000001, GoalWorkflow1764830000002, Runs1764840000000, RunClaimOrder1764850000000, Delegation1764860000000, WorkspaceIdempotency1764870000000, ApprovalSubjectFacts1764880000000, RunTraceContext1764895000000, Interrupts1764900000000, Webhooks1764910000000, RunSurface1764920000000, HostIdempotencyKeyspace1764920000001, ReplayForkFanout1764930000000, AuditLog1764940000000, ChainCatalogVersion1764950000000, RunFollowedUntil1764950000001, RunArtifacts1764960000000, RunWriteVolume1764970000000, ApprovalVoters1764980000000, AuditCheckpointExport1764980000001];
