import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** Where one callback stands: to send (or being sent), sent, given up, or no longer worth sending. */
export type CallbackStatus = 'pending' | 'delivering' | 'delivered' | 'failed' | 'obsolete';

/**
 * The interrupt-callback outbox (docs/interrupts.md "Callback delivery"): one row per opened
 * interrupt of a run created with a `callbackUrl`, written and claimed only by
 * interrupt-callbacks.service.ts. A claim is a lease (`next_attempt_at` moves past the attempt's
 * deadline), so the row of a replica that died mid-attempt is sent again once it runs out.
 */
@Entity({ name: 'interrupt_callback' })
@Index('interrupt_callback_due_idx', ['nextAttemptAt'], { where: `"status" IN ('pending', 'delivering')` })
@Index('interrupt_callback_run_idx', ['runId'])
export class InterruptCallbackEntity {
  @PrimaryColumn({ name: 'interrupt_id', type: 'uuid', primaryKeyConstraintName: 'PK_interrupt_callback' })
  interruptId: string;

  @Column({ type: 'text' })
  tenant: string;

  @Column({ name: 'run_id', type: 'uuid' })
  runId: string;

  @Column({ name: 'node_id', type: 'text' })
  nodeId: string;

  @Column({ type: 'text' })
  url: string;

  @Column({ type: 'text', default: 'pending' })
  status: CallbackStatus;

  @Column({ type: 'integer', default: 0 })
  attempts: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', default: () => 'now()' })
  nextAttemptAt: Date;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}
