import { Column, CreateDateColumn, Entity, Generated, Index, PrimaryColumn } from 'typeorm';

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

/**
 * One event of a stream. Its key is its place in its stream (tenant, stream, sequence): every read
 * finds events by stream (migration 1765100070000); `id` is the event's id on the wire, not indexed.
 * `tenant` is part of the key, so it is declared here (see WorkspaceOwnedEntity).
 */
@Entity({ name: 'event' })
// Only tool calls are looked up by type (the proposal synthesis; migration 1764970000000).
@Index('event_tool_call_idx', ['tenant', 'createdAt'], { where: `"type" = 'agent.toolCalled'` })
export class EventEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'event_stream_seq_uq' })
  tenant: string;

  /** The run id, or HOST_STREAM for the tenant's host-level events. */
  @PrimaryColumn({ name: 'stream_id', type: 'text', primaryKeyConstraintName: 'event_stream_seq_uq' })
  streamId: string;

  @PrimaryColumn({ type: 'bigint', primaryKeyConstraintName: 'event_stream_seq_uq' })
  sequence: string;

  @Column({ type: 'uuid' })
  @Generated('uuid')
  id: string;

  @Column({ type: 'text', nullable: true })
  workspace: string | null;

  @Column({ type: 'text' })
  type: string;

  /** Stored as written (`json`: smaller than `jsonb` for the small payloads of run events). */
  @Column({ type: 'json' })
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
