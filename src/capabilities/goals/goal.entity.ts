import { Column, Entity, Index, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { WorkspaceOwnedEntity } from '../../platform/tenancy/tenant-owned.entity';

export type GoalState = 'active' | 'satisfied' | 'escalated' | 'abandoned' | 'bound-exceeded';
export type GoalCheck = 'host' | 'verifier';
export type GoalContinuationMode = 'schedule' | 'commitment' | 'heartbeat' | 'manual';

/** The continuation modes whose arm starts runs through a goal worker (manual starts none). */
export const RUN_MODES: readonly GoalContinuationMode[] = ['schedule', 'commitment', 'heartbeat'];

/** When a `schedule` goal re-engages work: a fixed interval or a cron expression. */
export type GoalSchedule = { intervalMs: number } | { cron: string; timezone?: string };

/** RFC 0058/0084 bounds of a goal, after clamping to the host limits. */
export interface GoalBounds {
  maxLoopIterations?: number;
  runTimeoutMs?: number;
  maxCostUsd?: number;
}

export interface GoalVerdictRecord {
  satisfied: boolean;
  confidence: number;
  runId: string;
}

/**
 * A standing goal (RFC 0097), tenant-owned. Besides the wire fields it carries the continuation
 * state the scheduler claims with a lease (`lease_owner`/`lease_expires_at`) and the in-flight
 * iteration (`dispatch_key` before a run is started, `pending_run_id` while it runs), so a replica
 * that takes over a crashed replica's claim resumes the same iteration instead of starting another.
 */
@Entity({ name: 'goal' })
// The list's orders, ending in the primary key (migration 1765000000600).
@Index('goal_tenant_created_idx', ['tenant', 'createdAt', 'id'])
@Index('goal_tenant_state_created_idx', ['tenant', 'state', 'createdAt', 'id'])
// The scheduler's claim looks for due goals across every tenant; this is the one index of the table
// that cannot lead with tenant (it serves no tenant-facing query).
@Index('goal_due_idx', ['nextDueAt'])
export class GoalEntity extends WorkspaceOwnedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text', nullable: true })
  principal: string | null;

  @Column({ type: 'text' })
  objective: string;

  @Column({ type: 'text', default: 'active' })
  state: GoalState;

  @Column({ type: 'text' })
  judge: GoalCheck;

  @Column({ name: 'verifier_ref', type: 'text', nullable: true })
  verifierRef: string | null;

  /** JSON Schema completion criteria of the `host` judge (a host extension, not on the wire Goal). */
  @Column({ type: 'jsonb', nullable: true })
  criteria: Record<string, unknown> | null;

  @Column({ name: 'continuation_mode', type: 'text' })
  continuationMode: GoalContinuationMode;

  @Column({ name: 'arm_ref', type: 'text', nullable: true })
  armRef: string | null;

  @Column({ type: 'jsonb', nullable: true })
  schedule: GoalSchedule | null;

  /**
   * `commitment` continuation (RFC 0068, time condition): the instant the goal's standing commitment
   * fires. It fires once: the claim that starts its run clears it, and only a client re-arms it.
   */
  @Column({ name: 'commitment_at', type: 'timestamptz', nullable: true })
  commitmentAt: Date | null;

  /** `heartbeat` continuation (RFC 0060): the predicate's last observed state (opaque, size-capped). */
  @Column({ name: 'heartbeat_state', type: 'jsonb', nullable: true })
  heartbeatState: unknown;

  /**
   * The workflow (chain) the goal's runs execute, when the goal names one (a host extension: the wire
   * Goal is closed). Handed to the worker with every iteration.
   */
  @Column({ name: 'workflow_id', type: 'text', nullable: true })
  workflowId: string | null;

  /**
   * The scopes the creating principal held when it created the goal (never on the wire Goal): the
   * most the goal's local runs may act with. Null on goals created before delegation was recorded.
   */
  @Column({ name: 'delegated_scopes', type: 'text', array: true, nullable: true })
  delegatedScopes: string[] | null;

  /** The API key that created the goal: its runs hold the delegated scopes only while this key still does. */
  @Column({ name: 'delegated_key_id', type: 'uuid', nullable: true })
  delegatedKeyId: string | null;

  /** The goal worker that re-engages work (schedule, commitment and heartbeat modes). */
  @Column({ type: 'text', nullable: true })
  worker: string | null;

  @Column({ type: 'jsonb' })
  bounds: GoalBounds;

  /** createdAt + bounds.runTimeoutMs: the goal is past its deadline when now > deadline_at. */
  @Column({ name: 'deadline_at', type: 'timestamptz', nullable: true })
  deadlineAt: Date | null;

  @Column({ type: 'int', default: 0 })
  iterations: number;

  @Column({ name: 'cost_usd', type: 'double precision', default: 0 })
  costUsd: number;

  @Column({ name: 'contributing_run_ids', type: 'text', array: true, default: () => "'{}'" })
  contributingRunIds: string[];

  @Column({ name: 'last_verdict', type: 'jsonb', nullable: true })
  lastVerdict: GoalVerdictRecord | null;

  @Column({ type: 'boolean', default: false })
  paused: boolean;

  /** When the scheduler must look at the goal next (null: nothing to do until a client acts). */
  @Column({ name: 'next_due_at', type: 'timestamptz', nullable: true })
  nextDueAt: Date | null;

  @Column({ name: 'lease_owner', type: 'text', nullable: true })
  leaseOwner: string | null;

  @Column({ name: 'lease_expires_at', type: 'timestamptz', nullable: true })
  leaseExpiresAt: Date | null;

  /** Idempotency key of the iteration being dispatched (set before the worker is asked to start). */
  @Column({ name: 'dispatch_key', type: 'text', nullable: true })
  dispatchKey: string | null;

  @Column({ name: 'pending_run_id', type: 'text', nullable: true })
  pendingRunId: string | null;

  @Column({ name: 'dispatch_count', type: 'int', default: 0 })
  dispatchCount: number;

  @Column({ name: 'closed_at', type: 'timestamptz', nullable: true })
  closedAt: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

/**
 * One contributing run of a goal, recorded once: the primary key makes a second report of the same
 * run a no-op, so a verdict is never recomputed and a run's cost is never counted twice.
 */
@Entity({ name: 'goal_run' })
// The goals a run counts for, probed per run by the retention sweep's keeper (migration 1765000220000).
@Index('goal_run_run_idx', ['tenant', 'runId'])
// A goal's runs in the order they were recorded (migration 1765000000600).
@Index('goal_run_ordinal_idx', ['tenant', 'goalId', 'ordinal', 'runId'])
export class GoalRunEntity {
  @PrimaryColumn({ type: 'text' })
  tenant: string;

  @PrimaryColumn({ name: 'goal_id', type: 'uuid' })
  goalId: string;

  @PrimaryColumn({ name: 'run_id', type: 'text' })
  runId: string;

  @Column({ type: 'int' })
  ordinal: number;

  @Column({ type: 'text' })
  status: string;

  @Column({ name: 'cost_usd', type: 'double precision', nullable: true })
  costUsd: number | null;

  /** Null when the run was not judged because a bound was crossed first. */
  @Column({ type: 'boolean', nullable: true })
  satisfied: boolean | null;

  @Column({ type: 'double precision', nullable: true })
  confidence: number | null;

  @Column({ name: 'recorded_at', type: 'timestamptz' })
  recordedAt: Date;
}
