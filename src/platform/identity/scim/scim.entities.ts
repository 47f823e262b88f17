import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { TenantOwnedEntity } from '../../tenancy/tenant-owned.entity';

/**
 * A user an identity provider provisioned over SCIM 2.0 (RFC 7643 §4.1), per tenant. Its `userName`
 * (or `externalId`) is the principal its tokens and API keys carry. A deleted user stays as a
 * tombstone (`deleted_at`): its tokens are refused from then on, like a deactivated one's.
 */
@Entity({ name: 'scim_user' })
@Index('scim_user_name_idx', ['tenant', 'userName'])
@Index('scim_user_external_idx', ['tenant', 'externalId'])
@Index('scim_user_link_idx', ['tenant', 'linkIdp', 'externalId'])
export class ScimUserEntity extends TenantOwnedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'user_name', type: 'text' })
  userName: string;

  @Column({ name: 'external_id', type: 'text', nullable: true })
  externalId: string | null;

  @Column({ type: 'boolean', default: true })
  active: boolean;

  /** The SAML identity provider (its configured id) whose subjects this user links to by `externalId`; null: it links to none. */
  @Column({ name: 'link_idp', type: 'text', nullable: true })
  linkIdp: string | null;

  /** The rest of the resource as provisioned (name, displayName, emails...), echoed back. */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  attributes: Record<string, unknown>;

  @Column({ type: 'integer', default: 1 })
  version: number;

  @Column({ name: 'deleted_at', type: 'timestamptz', nullable: true })
  deletedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

/** A SCIM group (RFC 7643 §4.2): its `displayName` is the group the role mapping (OPENWOP_OIDC_GROUP_ROLES) reads. */
@Entity({ name: 'scim_group' })
@Index('scim_group_name_idx', ['tenant', 'displayName'])
export class ScimGroupEntity extends TenantOwnedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'display_name', type: 'text' })
  displayName: string;

  @Column({ name: 'external_id', type: 'text', nullable: true })
  externalId: string | null;

  /** Member user ids (scim_user.id). */
  @Column({ type: 'uuid', array: true, default: () => "'{}'" })
  members: string[];

  @Column({ type: 'integer', default: 1 })
  version: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
