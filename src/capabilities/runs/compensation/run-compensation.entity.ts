import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { RetryBounds } from './compensation-declaration';

/** The §D rollup a plan folds to (`RunSnapshot.compensationStatus`; `none` is a run without a plan). */
export type PlanStatus = 'pending' | 'running' | 'completed' | 'partial' | 'failed' | 'manual';

export type EntryStatus = 'pending' | 'running' | 'completed' | 'failed' | 'held' | 'skipped' | 'terminated' | 'irreversible';

/** One inverse action of a plan (or an `irreversible` entry, which runs nothing). */
export interface PlanEntry {
  /** Forward-completion ordinal: the node's place (1-based) in the order the run recorded its completions. */
  ordinal: number;
  /** Place in the plan (0-based): the compensation ordinal of the identity tuple. */
  position: number;
  nodeId: string;
  /** RFC 0150 identity of the forward invocation undone (its first ledger effect, else the node's own). */
  forwardLogicalInvocationId: string;
  /** The inverse action's identity (tenant, run, forward invocation, compensation ordinal, profile version): its idempotency key. */
  effectId: string;
  nodeTypeId: string | null;
  /** The input resolved from recorded facts when the plan was minted; never re-derived. */
  input: unknown;
  retry: RetryBounds;
  timeoutMs?: number;
  status: EntryStatus;
  attempts: number;
  /** Attempts allowed so far: the retry bounds, raised by each operator retry. */
  attemptBudget: number;
  /** The idempotency key presented to the downstream system, once per presentation (every attempt). */
  downstreamKeys: string[];
  lastError?: { code: string; message: string };
  reason?: string;
  /** A replay's entry: the source run whose recorded outcome it carries (nothing was executed). */
  replayedFrom?: string;
}

/**
 * A run's compensation plan (RFC 0151 §C), written only by compensation-store.ts: persisted before the
 * first inverse action, leased while an unwind executes it, changed by operators under `revision`.
 */
@Entity({ name: 'run_compensation' })
@Index('run_compensation_active_idx', ['leaseUntil'], { where: `"status" IN ('pending', 'running')` })
export class RunCompensationEntity {
  @PrimaryColumn({ name: 'run_id', type: 'uuid', primaryKeyConstraintName: 'PK_run_compensation' })
  runId: string;

  @Column({ type: 'text' })
  tenant: string;

  @Column({ type: 'text', nullable: true })
  workspace: string | null;

  @Column({ type: 'text' })
  status: PlanStatus;

  @Column({ type: 'text' })
  trigger: string;

  @Column({ name: 'plan_version', type: 'integer', default: 1 })
  planVersion: number;

  @Column({ name: 'profile_version', type: 'text' })
  profileVersion: string;

  @Column({ name: 'ordering_model', type: 'text' })
  orderingModel: string;

  @Column({ name: 'exhausted_disposition', type: 'text' })
  exhaustedDisposition: string;

  @Column({ type: 'jsonb' })
  entries: PlanEntry[];

  @Column({ name: 'lease_owner', type: 'text', nullable: true })
  leaseOwner: string | null;

  @Column({ name: 'lease_until', type: 'timestamptz', nullable: true })
  leaseUntil: Date | null;

  @Column({ type: 'integer', default: 0 })
  revision: number;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}
