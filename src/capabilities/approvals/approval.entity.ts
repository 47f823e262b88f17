import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { TenantOwnedEntity, WorkspaceKeyedEntity } from '../../platform/tenancy/tenant-owned.entity';

/**
 * An RFC 0051 approval gate. Opened by `apply` in approval-gate activation mode; released only when
 * `quorum` distinct principals holding `required_scope` (and the scopes of `required_role`) grant it
 * before `expires_at`. A denial or the timeout closes it and nothing is installed.
 */
@Entity({ name: 'approval' })
// The list's orders, ending in the primary key (migration 1765000000600).
@Index('approval_tenant_created_idx', ['tenant', 'createdAt', 'id'])
@Index('approval_tenant_state_created_idx', ['tenant', 'state', 'createdAt', 'id'])
@Index('approval_subject_idx', ['tenant', 'subjectId'])
@Index('approval_run_node_idx', ['runId', 'nodeId'])
export class ApprovalEntity extends WorkspaceKeyedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  /** What the gate releases: `proposal`, or `run-node` (a step of a run). */
  @Column({ name: 'subject_kind', type: 'text' })
  subjectKind: string;

  @Column({ name: 'subject_id', type: 'uuid' })
  subjectId: string;

  /** What the approvers are asked, in a line (null on rows written before hosts recorded it). */
  @Column({ type: 'text', nullable: true })
  title: string | null;

  /** A run step's gate: the run, the node and the workflow it belongs to. */
  @Column({ name: 'run_id', type: 'uuid', nullable: true })
  runId: string | null;

  @Column({ name: 'node_id', type: 'text', nullable: true })
  nodeId: string | null;

  @Column({ name: 'workflow_id', type: 'text', nullable: true })
  workflowId: string | null;

  /** The interrupt kind the gate holds a run step on: `approval`, `clarification` or `external-event`. */
  @Column({ type: 'text', default: 'approval' })
  kind: string;

  /** The JSON Schema a resolving value is checked against (null: any value / the accept-reject vocabulary). */
  @Column({ name: 'resume_schema', type: 'jsonb', nullable: true })
  resumeSchema: Record<string, unknown> | null;

  /** The kind's data: clarification questions, the awaited event type and its correlation. */
  @Column({ type: 'jsonb', nullable: true })
  data: Record<string, unknown> | null;

  /** How rejections close a multi-approver gate: `single-veto` (one reject) or `majority` (more than half of the quorum). */
  @Column({ name: 'rejection_policy', type: 'text', default: 'single-veto' })
  rejectionPolicy: string;

  /** The value the interrupt was resolved with (what the suspended node receives). */
  @Column({ name: 'resume_value', type: 'jsonb', nullable: true })
  resumeValue: unknown;

  /** Who closed it: the last voter of a quorum, the resolving principal, or `token:<gateId>` for a signed-token callback. */
  @Column({ name: 'resolved_by', type: 'text', nullable: true })
  resolvedBy: string | null;

  /** pending | granted | denied | expired | cancelled */
  @Column({ type: 'text', default: 'pending' })
  state: string;

  @Column({ name: 'required_scope', type: 'text' })
  requiredScope: string;

  @Column({ name: 'required_role', type: 'text', nullable: true })
  requiredRole: string | null;

  /** Whether `requested_by` (a run step's owner, a proposal's applier) may approve it (`core.approval allowSelfApproval`, else the host's setting). */
  @Column({ name: 'allow_self_approval', type: 'boolean', default: true })
  allowSelfApproval: boolean;

  /** The scope the workflow designated to record votes for named voters (`core.approval namedVoters.recordedBy`); null: only `approvals:act-as`. */
  @Column({ name: 'named_voters_scope', type: 'text', nullable: true })
  namedVotersScope: string | null;

  @Column({ type: 'integer' })
  quorum: number;

  /** The exact artifact bytes (`sha256:<hex>`) the approvers are asked to release. */
  @Column({ name: 'artifact_ref', type: 'text' })
  artifactRef: string;

  @Column({ name: 'requested_by', type: 'text' })
  requestedBy: string;

  /** Why the gate closed without release (denial reason, `timeout`, `superseded`...). */
  @Column({ type: 'text', nullable: true })
  reason: string | null;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'decided_at', type: 'timestamptz', nullable: true })
  decidedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

/** One voter's decision on a gate; the unique index on the voter's canonical key makes a quorum count distinct voters. */
@Entity({ name: 'approval_decision' })
@Index('approval_decision_voter_uq', ['tenant', 'approvalId', 'voterKey'], { unique: true })
export class ApprovalDecisionEntity extends TenantOwnedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'approval_id', type: 'uuid' })
  approvalId: string;

  /** Whom the decision counts for (the voter a resolving value names, else the deciding principal). */
  @Column({ type: 'text' })
  principal: string;

  /**
   * The voter's canonical key (NFKC, trimmed, case-folded; `approval-voters.ts`), unique per gate. Null
   * only on rows written before it was recorded whose gate had closed (and on a pending gate's later
   * duplicate of an earlier voter).
   */
  @Column({ name: 'voter_key', type: 'text', nullable: true })
  voterKey: string | null;

  /** The credential's principal that cast the decision (null on rows written before it was recorded). */
  @Column({ name: 'submitted_by', type: 'text', nullable: true })
  submittedBy: string | null;

  /** granted | denied */
  @Column({ type: 'text' })
  decision: string;

  @Column({ type: 'text', nullable: true })
  reason: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
