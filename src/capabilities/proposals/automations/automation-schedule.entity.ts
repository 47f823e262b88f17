import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { WorkspaceKeyedEntity } from '../../../platform/tenancy/tenant-owned.entity';

/**
 * The schedule of an installed automation (one row per installed `automation` artifact). Written only
 * by the automation installer, so an automation that is merely proposed is never scheduled. Due rows
 * are claimed with `FOR UPDATE SKIP LOCKED`, so each firing happens on one replica.
 */
@Entity({ name: 'automation_schedule' })
@Index('automation_schedule_name_uq', ['tenant', 'workspaceKey', 'name'], { unique: true })
@Index('automation_schedule_due_idx', ['tenant', 'nextRunAt'])
export class AutomationScheduleEntity extends WorkspaceKeyedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  name: string;

  /** The installed artifact's ref (`sha256:<hex>`) this schedule was derived from. */
  @Column({ name: 'artifact_ref', type: 'text' })
  artifactRef: string;

  @Column({ type: 'text', nullable: true })
  cron: string | null;

  @Column({ type: 'text', nullable: true })
  timezone: string | null;

  @Column({ name: 'interval_ms', type: 'integer', nullable: true })
  intervalMs: number | null;

  @Column({ type: 'jsonb' })
  action: Record<string, unknown>;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  /** null while disabled. */
  @Column({ name: 'next_run_at', type: 'timestamptz', nullable: true })
  nextRunAt: Date | null;

  @Column({ name: 'last_run_at', type: 'timestamptz', nullable: true })
  lastRunAt: Date | null;

  @Column({ name: 'last_run_id', type: 'text', nullable: true })
  lastRunId: string | null;

  @Column({ name: 'run_count', type: 'integer', default: 0 })
  runCount: number;

  /** Who installed it: automations fire on behalf of that principal. */
  @Column({ name: 'installed_by', type: 'text' })
  installedBy: string;

  /** The scopes the installer held when installing: the most the automation's runs may act with. */
  @Column({ name: 'delegated_scopes', type: 'text', array: true, nullable: true })
  delegatedScopes: string[] | null;

  /** The installer's API key: the runs hold the delegated scopes only while this key still does. */
  @Column({ name: 'delegated_key_id', type: 'uuid', nullable: true })
  delegatedKeyId: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
