import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/**
 * An RFC 0051 approval gate. Opened by `apply` in approval-gate activation mode; released only when
 * `quorum` distinct principals holding `required_scope` (and the scopes of `required_role`) grant it
 * before `expires_at`. A denial or the timeout closes it and nothing is installed.
 */
@Entity({ name: 'approval' })
@Index('approval_tenant_state_idx', ['tenant', 'state', 'createdAt'])
@Index('approval_subject_idx', ['tenant', 'subjectId'])
export class ApprovalEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  tenant: string;

  @Column({ name: 'workspace_key', type: 'text', default: '' })
  workspaceKey: string;

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

  /** pending | granted | denied | expired | cancelled */
  @Column({ type: 'text', default: 'pending' })
  state: string;

  @Column({ name: 'required_scope', type: 'text' })
  requiredScope: string;

  @Column({ name: 'required_role', type: 'text', nullable: true })
  requiredRole: string | null;

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

/** One principal's decision on a gate; the unique index makes quorum count distinct principals. */
@Entity({ name: 'approval_decision' })
@Index('approval_decision_uq', ['tenant', 'approvalId', 'principal'], { unique: true })
export class ApprovalDecisionEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  tenant: string;

  @Column({ name: 'approval_id', type: 'uuid' })
  approvalId: string;

  @Column({ type: 'text' })
  principal: string;

  /** granted | denied */
  @Column({ type: 'text' })
  decision: string;

  @Column({ type: 'text', nullable: true })
  reason: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
