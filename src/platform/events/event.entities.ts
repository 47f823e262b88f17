import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { WorkspaceOwnedEntity } from '../tenancy/tenant-owned.entity';

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
// Only tool calls are looked up by type (the proposal synthesis; migration 1764970000000).
@Index('event_tool_call_idx', ['tenant', 'createdAt'], { where: `"type" = 'agent.toolCalled'` })
export class EventEntity extends WorkspaceOwnedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

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
