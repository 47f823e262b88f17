import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A node's statuses: the values of the enum `run_node_status` (migration 1765430020000), in its order. */
export const RUN_NODE_STATUSES = ['running', 'waiting', 'completed', 'failed', 'skipped', 'cancelled'] as const;
export type RunNodeStatus = (typeof RUN_NODE_STATUSES)[number];

/**
 * One node of a workflow run, written by the run engine. A node's completion and its outputs are
 * written in one statement, conditional on the node not being completed yet, inside the transaction
 * that checks the run's lease fence: a node is never completed twice.
 *
 * A node row holds no tenant of its own: it is its run's (run_id), and every reader reaches it
 * through a run row it read with the tenant (the engine's claim, a run found in the caller's scope).
 * Nor its node's type: that is in the run's stored definition, which those readers have with the run
 * (migration 1765430020000, which also made the status a 4-byte enum).
 */
@Entity({ name: 'run_node' })
export class RunNodeEntity {
  @PrimaryColumn({ name: 'run_id', type: 'uuid', primaryKeyConstraintName: 'PK_run_node' })
  runId: string;

  @PrimaryColumn({ name: 'node_id', type: 'text', primaryKeyConstraintName: 'PK_run_node' })
  nodeId: string;

  @Column({ type: 'enum', enum: RUN_NODE_STATUSES, enumName: 'run_node_status' })
  status: RunNodeStatus;

  @Column({ type: 'integer', default: 0 })
  attempt: number;

  @Column({ type: 'jsonb', nullable: true })
  outputs: Record<string, unknown> | null;

  @Column({ type: 'jsonb', nullable: true })
  error: { code: string; message: string } | null;

  /** The approval gate a `waiting` node is suspended on. */
  @Column({ name: 'gate_id', type: 'uuid', nullable: true })
  gateId: string | null;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}
