import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * Which installed connection pack holds a provider id in a tenant. The primary key makes "two
 * installed packs claiming the same provider id" impossible, also between racing installs on
 * different replicas: the second insert conflicts and its install rolls back.
 */
@Entity({ name: 'connection_provider_claim' })
@Index('connection_provider_claim_pack_idx', ['tenant', 'packName'])
export class ConnectionProviderClaimEntity {
  @PrimaryColumn({ type: 'text' })
  tenant: string;

  @PrimaryColumn({ name: 'provider_id', type: 'text' })
  providerId: string;

  @Column({ name: 'pack_name', type: 'text' })
  packName: string;

  /** The registry workspace key of the pack row ('' for a tenant-wide pack). */
  @Column({ name: 'workspace_key', type: 'text', default: '' })
  workspaceKey: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
