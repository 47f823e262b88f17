import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { WorkspaceOwnedEntity } from '../tenancy/tenant-owned.entity';

@Entity({ name: 'api_key' })
// The key list's order, ending in the primary key (migration 1765000000601).
@Index('api_key_tenant_created_idx', ['tenant', 'createdAt', 'id'])
export class ApiKeyEntity extends WorkspaceOwnedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  /** Public lookup half of the key; the secret half is stored only as a SHA-256 hash. */
  @Index('api_key_lookup_uq', { unique: true })
  @Column({ name: 'lookup_id', type: 'text' })
  lookupId: string;

  @Column({ name: 'secret_hash', type: 'text' })
  secretHash: string;

  @Column({ type: 'text' })
  principal: string;

  @Column({ type: 'text', nullable: true })
  name: string | null;

  @Column({ type: 'text', array: true, default: () => "'{}'" })
  scopes: string[];

  @Column({ type: 'text', array: true, default: () => "'{}'" })
  roles: string[];

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  /** When this key was rotated (its expiresAt then ends the overlap) and the key that replaced it. */
  @Column({ name: 'rotated_at', type: 'timestamptz', nullable: true })
  rotatedAt: Date | null;

  @Column({ name: 'rotated_to', type: 'uuid', nullable: true })
  rotatedTo: string | null;

  /** The key this one replaced by a rotation. */
  @Column({ name: 'rotated_from', type: 'uuid', nullable: true })
  rotatedFrom: string | null;

  /** First use after a rotation, of the rotated key or of its successor (audited as `key.used`). */
  @Column({ name: 'rotation_used_at', type: 'timestamptz', nullable: true })
  rotationUsedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
