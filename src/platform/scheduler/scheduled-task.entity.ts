import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One row per host-wide periodic task; the lease columns make each slot run on one replica. */
@Entity({ name: 'scheduled_task' })
export class ScheduledTaskEntity {
  @PrimaryColumn({ type: 'text' })
  name: string;

  @Column({ name: 'interval_ms', type: 'integer' })
  intervalMs: number;

  @Column({ name: 'next_run_at', type: 'timestamptz' })
  nextRunAt: Date;

  @Column({ name: 'lease_owner', type: 'text', nullable: true })
  leaseOwner: string | null;

  @Column({ name: 'lease_expires_at', type: 'timestamptz', nullable: true })
  leaseExpiresAt: Date | null;

  @Column({ name: 'last_run_at', type: 'timestamptz', nullable: true })
  lastRunAt: Date | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;
}
