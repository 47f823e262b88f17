import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';

/** A run owned by a tenant. Host-level streams (goal, proposal, import events) have no run row. */
@Entity({ name: 'run' })
@Index('run_tenant_idx', ['tenant', 'createdAt'])
export class RunEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  tenant: string;

  @Column({ type: 'text', nullable: true })
  workspace: string | null;

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
}

/** The per-stream sequence counter; its row lock serializes appends so sequences stay gap-free. */
@Entity({ name: 'event_stream' })
export class EventStreamEntity {
  @PrimaryColumn({ type: 'text' })
  tenant: string;

  @PrimaryColumn({ name: 'stream_id', type: 'text' })
  streamId: string;

  @Column({ name: 'last_sequence', type: 'bigint', default: 0 })
  lastSequence: string;
}

@Entity({ name: 'event' })
@Index('event_stream_seq_uq', ['tenant', 'streamId', 'sequence'], { unique: true })
@Index('event_tenant_type_idx', ['tenant', 'type', 'createdAt'])
export class EventEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  tenant: string;

  @Column({ type: 'text', nullable: true })
  workspace: string | null;

  /** The run id, or HOST_STREAM for the tenant's host-level events. */
  @Column({ name: 'stream_id', type: 'text' })
  streamId: string;

  @Column({ type: 'bigint' })
  sequence: string;

  @Column({ type: 'text' })
  type: string;

  @Column({ type: 'jsonb' })
  payload: Record<string, unknown>;

  @Column({ name: 'correlation_id', type: 'text', nullable: true })
  correlationId: string | null;

  @Column({ name: 'causation_id', type: 'text', nullable: true })
  causationId: string | null;

  @Column({ name: 'node_id', type: 'text', nullable: true })
  nodeId: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
