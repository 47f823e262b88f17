import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { TenantOwnedEntity } from '../../../platform/tenancy/tenant-owned.entity';

/**
 * An authorization in flight (RFC 0047 §C): the `state` is kept only as its SHA-256, the PKCE verifier sealed in the
 * credential store. Consumed (deleted) by the callback, whatever its outcome; refused after `expiresAt`.
 */
@Entity({ name: 'oauth_authorization' })
@Index('oauth_authorization_state_uq', ['stateHash'], { unique: true })
export class OAuthAuthorizationEntity extends TenantOwnedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'state_hash', type: 'text' })
  stateHash: string;

  @Column({ name: 'connection_id', type: 'uuid' })
  connectionId: string;

  @Column({ type: 'text' })
  principal: string;

  @Column({ type: 'boolean', default: false })
  shared: boolean;

  @Column({ name: 'verifier_credential_id', type: 'uuid' })
  verifierCredentialId: string;

  @Column({ type: 'text', array: true })
  scopes: string[];

  @Column({ name: 'redirect_uri', type: 'text' })
  redirectUri: string;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

/**
 * A grant: the token set one principal (or, `principal` = '', the whole tenant) obtained for a connection, sealed in
 * the credential store as JSON. `status` is `active` or `expired` (a refresh failed for good: re-authorize).
 */
@Entity({ name: 'oauth_grant' })
@Index('oauth_grant_principal_uq', ['tenant', 'connectionId', 'principal'], { unique: true })
export class OAuthGrantEntity extends TenantOwnedEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'connection_id', type: 'uuid' })
  connectionId: string;

  @Column({ type: 'text' })
  principal: string;

  @Column({ name: 'credential_id', type: 'uuid' })
  credentialId: string;

  @Column({ type: 'text', array: true })
  scopes: string[];

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @Column({ type: 'text', default: 'active' })
  status: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
