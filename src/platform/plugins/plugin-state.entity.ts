import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** The per-tenant key-value store plugins get instead of raw database access. */
@Entity({ name: 'plugin_state' })
export class PluginStateEntity {
  @PrimaryColumn({ type: 'text' })
  tenant: string;

  @PrimaryColumn({ name: 'plugin_id', type: 'text' })
  pluginId: string;

  @PrimaryColumn({ type: 'text' })
  key: string;

  @Column({ type: 'jsonb' })
  value: unknown;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
