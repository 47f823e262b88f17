import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { WorkspaceKeyedEntity } from '../../platform/tenancy/tenant-owned.entity';

/**
 * A reviewable-learning proposal (RFC 0096): an inert draft artifact. Nothing in this table is read
 * by run resolution, the tool catalog or the scheduler; only `apply` copies the stored bytes into the
 * pack registry.
 */
@Entity({ name: 'proposal' })
@Index('proposal_tenant_state_idx', ['tenant', 'workspaceKey', 'state', 'createdAt'])
// The list's orders for a tenant-level caller, ending in the primary key (migration 1765000000600).
@Index('proposal_tenant_created_idx', ['tenant', 'createdAt', 'id'])
@Index('proposal_tenant_state_created_idx', ['tenant', 'state', 'createdAt', 'id'])
@Index('proposal_evidence_uq', ['tenant', 'workspaceKey', 'evidenceKey'], { unique: true })
export class ProposalEntity extends WorkspaceKeyedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  /** The principal that proposed it (a synthesizer's is `system`). */
  @Column({ type: 'text', nullable: true })
  principal: string | null;

  @Column({ type: 'text' })
  kind: string;

  @Column({ type: 'text', default: 'draft' })
  state: string;

  @Column({ type: 'text', nullable: true })
  title: string | null;

  @Column({ type: 'text', nullable: true })
  rationale: string | null;

  /** The artifact exactly as last persisted: its JSON text as submitted, byte for byte (what GET serves and apply installs). */
  @Column({ name: 'artifact_bytes', type: 'text' })
  artifactBytes: string;

  /** `sha256:<hex>` of `artifact_bytes`. */
  @Column({ name: 'artifact_ref', type: 'text' })
  artifactRef: string;

  @Column({ name: 'source_run_ids', type: 'text', array: true, default: '{}' })
  sourceRunIds: string[];

  @Column({ name: 'synthesizer_model', type: 'text', nullable: true })
  synthesizerModel: string | null;

  /** What a synthesizer derived the draft from; one proposal per evidence, whatever its state. */
  @Column({ name: 'evidence_key', type: 'text', nullable: true })
  evidenceKey: string | null;

  @Column({ name: 'duplicate_of', type: 'text', nullable: true })
  duplicateOf: string | null;

  /** Set only when the proposal is applied. */
  @Column({ name: 'installed_artifact_ref', type: 'text', nullable: true })
  installedArtifactRef: string | null;

  /** The approval gate that released the install (approval-gate activation), when applied. */
  @Column({ name: 'approval_id', type: 'uuid', nullable: true })
  approvalId: string | null;

  /** An open approval gate waiting to release this proposal (approval-gate activation). */
  @Column({ name: 'pending_approval_id', type: 'uuid', nullable: true })
  pendingApprovalId: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
