import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, VirtualColumn } from 'typeorm';
import { WorkspaceOwnedEntity } from '../../platform/tenancy/tenant-owned.entity';
import { definitionSelect } from './run-definition.entity';
import { principalSelect } from './run-principal.entity';

/**
 * A run owned by a tenant. Host-level streams (goal, proposal, import events) have no run row.
 * `kind` says who drives it: `workflow` runs are executed by the run engine (the columns after
 * `metadata`), other kinds (tool sessions, automations) are recorded by their capability.
 */
@Entity({ name: 'run' })
// The run list's orders, ending in the primary key (migration 1765000000602).
@Index('run_tenant_created_idx', ['tenant', 'createdAt', 'id'])
// By status over the runs not completed (migration 1765430010000; a partial index, kept by the migration): a page of
// completed runs, most of a tenant's history, is read from run_tenant_created_idx.
@Index('run_tenant_status_not_completed_idx', { synchronize: false })
// The run list filtered by workflow (v2 runList's workflowId filter; migration 1765000130000).
@Index('run_tenant_workflow_created_idx', ['tenant', 'workflowId', 'createdAt', 'id'])
// Both filters at once, over the runs not completed (migration 1765410000001; a partial index, kept by the migration).
@Index('run_tenant_workflow_status_created_idx', { synchronize: false })
// Runs in progress by status, for the gauge (migration 1764970000000).
@Index('run_active_idx', ['status'], { where: `"kind" = 'workflow' AND "status" IN ('pending', 'running', 'waiting-approval', 'waiting-input', 'waiting-external', 'cancelling')` })
// The engine's claim order over claimable workflow runs only (migration 1764850000000).
@Index('run_claimable_idx', ['createdAt'], { where: `"kind" = 'workflow' AND "status" IN ('pending', 'running', 'cancelling')` })
// An Idempotency-Key is scoped by tenant and workspace (migration 1764870000000); only keyed runs are in it (1764970000000).
@Index('run_idempotency_scope_uq', ['tenant', 'workspaceKey', 'idempotencyKey'], { unique: true, where: `"idempotency_key" IS NOT NULL` })
// At most one active `X-Dedup: enforce` run per tenant, workspace and scopeId (migration 1764920000000).
@Index('run_dedup_active_uq', ['tenant', 'workspaceKey', 'dedupScope'], {
  unique: true,
  where: `"dedup_scope" IS NOT NULL AND "status" IN ('pending', 'running', 'paused', 'waiting-approval', 'waiting-input', 'waiting-external', 'cancelling')`,
})
@Index('run_scope_idx', ['tenant', 'workspaceKey', 'scopeId'], { where: `"scope_id" IS NOT NULL` })
// A run's child runs, by the parent named in their metadata (migration 1765000180000; an expression index, kept by the migration).
@Index('run_parent_idx', { synchronize: false })
// Terminal runs by finish time, the retention sweep's order (migration 1765000220000; an expression index, kept by the migration).
@Index('run_expiry_idx', { synchronize: false })
// The fair claim: tenants with claimable runs and their backlogs in order, and their leased runs (migration 1765000220001; kept by the migration).
@Index('run_claim_tenant_idx', { synchronize: false })
@Index('run_leased_idx', { synchronize: false })
export class RunEntity extends WorkspaceOwnedEntity {
  /** Time-ordered (UUID version 7): made by the host (run-id.ts), else by the column's default (migration 1765410000000). */
  @PrimaryColumn('uuid', { default: () => 'run_new_id()' })
  id: string;

  /** The workspace, '' for a tenant-level run: the scope of the run's idempotency key. */
  @Column({ name: 'workspace_key', type: 'text', default: '' })
  workspaceKey: string;

  @Column({ type: 'text', nullable: true })
  principal: string | null;

  @Column({ type: 'text' })
  kind: string;

  @Column({ type: 'text', default: 'running' })
  status: string;

  @Column({ type: 'jsonb' })
  metadata: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'workflow_id', type: 'text', nullable: true })
  workflowId: string | null;

  /**
   * The chain's DAG as resolved when the run was created (a later pack update does not change a run):
   * the number of its `run_definition` row of the tenant (migrations 1765300000000, 1765430030000).
   */
  @Column({ name: 'definition_key', type: 'bigint', nullable: true })
  definitionKey: string | null;

  /** The definition itself, read through the key with the row (never written through the entity). */
  @VirtualColumn({ type: 'jsonb', query: definitionSelect })
  definition: Record<string, unknown> | null;

  @Column({ type: 'jsonb', nullable: true })
  inputs: Record<string, unknown> | null;

  @Column({ type: 'jsonb', nullable: true })
  configurable: Record<string, unknown> | null;

  @Column({ type: 'jsonb', nullable: true })
  outputs: Record<string, unknown> | null;

  @Column({ type: 'jsonb', nullable: true })
  error: { code: string; message: string; details?: Record<string, unknown> } | null;

  /** The number of who started the run (its owner's subject, its starter's scopes) in `run_principal` (migrations 1765300010000, 1765430030000). */
  @Column({ name: 'principal_key', type: 'bigint', nullable: true })
  principalKey: string | null;

  /** The starter's scopes (read through `principal_key`): tool calls of the run are authorized with them, on any replica. */
  @VirtualColumn({ query: (alias) => principalSelect(alias, 'scopes') })
  scopes: string[] | null;

  @Column({ name: 'idempotency_key', type: 'text', nullable: true })
  idempotencyKey: string | null;

  @Column({ name: 'request_hash', type: 'text', nullable: true })
  requestHash: string | null;

  /** The body `POST /v1/runs` first answered for this run's Idempotency-Key (a replay answers it again). */
  @Column({ name: 'create_response', type: 'jsonb', nullable: true })
  createResponse: Record<string, unknown> | null;

  /** The request's `scopeId` (opaque correlation id). */
  @Column({ name: 'scope_id', type: 'text', nullable: true })
  scopeId: string | null;

  /** The `scopeId` when the request asked `X-Dedup: enforce`: the claim of `run_dedup_active_uq`. */
  @Column({ name: 'dedup_scope', type: 'text', nullable: true })
  dedupScope: string | null;

  @Column({ name: 'lease_owner', type: 'text', nullable: true })
  leaseOwner: string | null;

  @Column({ name: 'lease_expires_at', type: 'timestamptz', nullable: true })
  leaseExpiresAt: Date | null;

  /** Incremented by every claim: writes of an older claim holder are refused. */
  @Column({ type: 'integer', default: 0 })
  fence: number;

  /**
   * Until when a replica that does not execute the run follows its events (SSE, long poll): while
   * it is in the future, the engine's writes of the run notify `openwop_events`, so that follower
   * is woken at once instead of at its next poll. Nobody else pays for the notification.
   */
  @Column({ name: 'followed_until', type: 'timestamptz', nullable: true })
  followedUntil: Date | null;

  @Column({ name: 'cancel_requested', type: 'boolean', default: false })
  cancelRequested: boolean;

  @Column({ name: 'node_executions', type: 'integer', default: 0 })
  nodeExecutions: number;

  @Column({ name: 'cost_usd', type: 'double precision', default: 0 })
  costUsd: number;

  @Column({ name: 'current_node_id', type: 'text', nullable: true })
  currentNodeId: string | null;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt: Date | null;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt: Date | null;

  /**
   * The W3C trace context of the request that created the run (migration 1764895000000), so the run's
   * spans join that request's trace on whichever replica executes it. Never shown on the wire.
   */
  @Column({ name: 'trace_parent', type: 'text', nullable: true })
  traceParent: string | null;

  @Column({ name: 'trace_state', type: 'text', nullable: true })
  traceState: string | null;

  /**
   * The principal who asked for this run's fork (`POST /v1/runs/{runId}:fork`; migration
   * 1764980000002): a fork is owned by its source's owner (`principal`). Null on runs that are no fork.
   */
  @Column({ name: 'forked_by', type: 'text', nullable: true })
  forkedBy: string | null;
}
