import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { TenantOwnedEntity } from '../../../platform/tenancy/tenant-owned.entity';

/**
 * The credential store: sealed secrets only. `sealed` is opaque bytes from the key provider (for the
 * built-in provider: AES-256-GCM nonce, tag and ciphertext, bound to tenant and id). Only the
 * credential store service reads this table; nothing maps it to a response.
 */
@Entity({ name: 'credential' })
@Index('credential_tenant_key_idx', ['tenant', 'keyId'])
export class CredentialEntity extends TenantOwnedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'key_provider', type: 'text' })
  keyProvider: string;

  @Column({ name: 'key_id', type: 'text' })
  keyId: string;

  @Column({ type: 'bytea' })
  sealed: Buffer;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
