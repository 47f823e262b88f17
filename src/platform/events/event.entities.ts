import { Column, CreateDateColumn, Entity, Generated, Index, PrimaryColumn } from 'typeorm';

/**
 * The per-stream sequence counter; its row lock serializes appends so sequences stay gap-free. `key`
 * is the number its events are stored under (migration 1765200500000), drawn when the stream is
 * first appended to.
 */
@Entity({ name: 'event_stream' })
@Index('event_stream_key_uq', ['key'], { unique: true })
export class EventStreamEntity {
  @PrimaryColumn({ type: 'text' })
  tenant: string;

  @PrimaryColumn({ name: 'stream_id', type: 'text' })
  streamId: string;

  @Column({ name: 'last_sequence', type: 'bigint', default: 0 })
  lastSequence: string;

  @Column({ type: 'bigint' })
  @Generated('increment')
  key: string;
}

/** An event as read back: its stream's id (from the stream row) with the event's own columns. */
export interface EventRecord {
  id: string;
  streamId: string;
  sequence: string;
  type: string;
  payload: Record<string, unknown>;
  correlationId: string | null;
  causationId: string | null;
  nodeId: string | null;
  createdAt: Date;
}

/** An event as stored, with its tenant and workspace. */
export interface StoredEvent extends EventRecord {
  tenant: string;
  workspace: string | null;
}

/**
 * One event of a stream. Its key is its place in its stream (stream_key, sequence): every read finds
 * the stream row by (tenant, stream_id), then its events by the stream's key (migration
 * 1765200500000; before it, 1765100070000 keyed them by (tenant, stream_id, sequence)). `id` is the
 * event's id on the wire, not indexed. The columns are in the table's order (no alignment padding).
 */
@Entity({ name: 'event' })
// Only tool calls are looked up by type (the proposal synthesis; migration 1764970000000).
@Index('event_tool_call_idx', ['tenant', 'createdAt'], { where: `"type" = 'agent.toolCalled'` })
export class EventEntity {
  /** The stream's `event_stream.key`. */
  @PrimaryColumn({ name: 'stream_key', type: 'bigint', primaryKeyConstraintName: 'event_stream_seq_uq' })
  streamKey: string;

  @PrimaryColumn({ type: 'bigint', primaryKeyConstraintName: 'event_stream_seq_uq' })
  sequence: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ type: 'uuid' })
  @Generated('uuid')
  id: string;

  /** The type's number when it has one, and flags of the payload's stored form (event-codes.ts; migration 1765400000000). */
  @Column({ type: 'smallint', default: 0 })
  code: number;

  /** The stream's tenant, on a tool call only (the tool-call index and log; migration 1765400010000): null on any other event. */
  @Column({ type: 'text', nullable: true })
  tenant: string | null;

  @Column({ type: 'text', nullable: true })
  workspace: string | null;

  /** The type's text, when it has no code (null when `code` names it). */
  @Column({ type: 'text', nullable: true })
  type: string | null;

  /** Stored as written (`json`: smaller than `jsonb` for the small payloads of run events). */
  @Column({ type: 'json' })
  payload: Record<string, unknown>;

  @Column({ name: 'correlation_id', type: 'text', nullable: true })
  correlationId: string | null;

  @Column({ name: 'causation_id', type: 'text', nullable: true })
  causationId: string | null;

  @Column({ name: 'node_id', type: 'text', nullable: true })
  nodeId: string | null;
}
