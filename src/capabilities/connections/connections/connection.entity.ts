import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { TenantOwnedEntity } from '../../../platform/tenancy/tenant-owned.entity';

/**
 * A tenant's connection: a provider plus a reference to a credential in the credential store.
 * The row never holds credential material; `credentialId` is null for a connection imported
 * without its credential (it needs a re-bind).
 */
@Entity({ name: 'connection' })
@Index('connection_name_uq', ['tenant', 'name'], { unique: true })
@Index('connection_provider_idx', ['tenant', 'providerId'])
export class ConnectionEntity extends TenantOwnedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ name: 'provider_id', type: 'text' })
  providerId: string;

  @Column({ name: 'credential_id', type: 'uuid', nullable: true })
  credentialId: string | null;

  /**
   * A two-key-overlap rotation in progress (RFC 0046 §D): the material the last rotation replaced,
   * sealed in the credential store, still offered until `previousCredentialExpiresAt`; then deleted.
   */
  @Column({ name: 'previous_credential_id', type: 'uuid', nullable: true })
  previousCredentialId: string | null;

  @Column({ name: 'previous_credential_expires_at', type: 'timestamptz', nullable: true })
  previousCredentialExpiresAt: Date | null;

  /** Where the connection came from: `api` or `import`. */
  @Column({ type: 'text', default: 'api' })
  origin: string;

  @Column({ name: 'created_by', type: 'text' })
  createdBy: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
