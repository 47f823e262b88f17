import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { TenantOwnedEntity } from '../tenancy/tenant-owned.entity';

/**
 * A Layer-1 idempotency record (idempotency.md §"Record shape, digest, and lease") of a mutating
 * route other than `POST /v1/runs` (whose records are the run rows themselves): keyed by the
 * authenticated tenant, the workspace ('' for a tenant-level caller), the routed operation and the
 * caller's key.
 */
@Entity({ name: 'idempotency_record' })
@Index('idempotency_record_expiry_idx', ['expiresAt'])
export class IdempotencyRecordEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'idempotency_record_pk' })
  tenant: string;

  @PrimaryColumn({ name: 'workspace_key', type: 'text', default: '', primaryKeyConstraintName: 'idempotency_record_pk' })
  workspaceKey: string;

  /** The routed operation, e.g. `POST /v1/runs/{runId}/cancel`. */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'idempotency_record_pk' })
  endpoint: string;

  @PrimaryColumn({ name: 'idempotency_key', type: 'text', primaryKeyConstraintName: 'idempotency_record_pk' })
  idempotencyKey: string;

  @Column({ name: 'request_digest', type: 'text' })
  requestDigest: string;

  /** pending | completed | retryable-failure | terminal-failure */
  @Column({ type: 'text' })
  state: string;

  @Column({ name: 'lease_owner', type: 'text', nullable: true })
  leaseOwner: string | null;

  @Column({ name: 'lease_expires_at', type: 'timestamptz', nullable: true })
  leaseExpiresAt: Date | null;

  @Column({ name: 'response_status', type: 'integer', nullable: true })
  responseStatus: number | null;

  @Column({ name: 'response_body', type: 'jsonb', nullable: true })
  responseBody: Record<string, unknown> | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;
}

/**
 * The Layer-2 invocation log (idempotency.md §"Engine guarantees"): one row per logical effect
 * identity, written by an insert-if-absent claim before the effect, then its persisted outcome.
 */
@Entity({ name: 'activity_invocation' })
@Index('activity_invocation_run_idx', ['tenant', 'runId'])
@Index('activity_invocation_expiry_idx', ['expiresAt'])
export class ActivityInvocationEntity extends TenantOwnedEntity {
  @PrimaryColumn({ name: 'logical_invocation_id', type: 'text', primaryKeyConstraintName: 'activity_invocation_pk' })
  logicalInvocationId: string;

  @Column({ name: 'run_id', type: 'text' })
  runId: string;

  @Column({ name: 'node_id', type: 'text' })
  nodeId: string;

  @Column({ type: 'integer' })
  ordinal: number;

  @Column({ name: 'provider_key', type: 'text' })
  providerKey: string;

  /** pending | completed | failed */
  @Column({ type: 'text' })
  state: string;

  /** The executor that won the claim. */
  @Column({ type: 'text' })
  owner: string;

  @Column({ type: 'jsonb', nullable: true })
  result: Record<string, unknown> | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;
}
