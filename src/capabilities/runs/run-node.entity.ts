import { Column, Entity, PrimaryColumn } from 'typeorm';

export type RunNodeStatus = 'running' | 'waiting' | 'completed' | 'failed' | 'skipped' | 'cancelled';

/**
 * One node of a workflow run, written by the run engine. A node's completion and its outputs are
 * written in one statement, conditional on the node not being completed yet, inside the transaction
 * that checks the run's lease fence: a node is never completed twice.
 *
 * A node row holds no tenant of its own: it is its run's (run_id), and every reader reaches it
 * through a run row it read with the tenant (the engine's claim, a run found in the caller's scope).
 */
@Entity({ name: 'run_node' })
export class RunNodeEntity {
  @PrimaryColumn({ name: 'run_id', type: 'uuid', primaryKeyConstraintName: 'PK_run_node' })
  runId: string;

  @PrimaryColumn({ name: 'node_id', type: 'text', primaryKeyConstraintName: 'PK_run_node' })
  nodeId: string;

  @Column({ name: 'type_id', type: 'text' })
  typeId: string;

  @Column({ type: 'text' })
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
