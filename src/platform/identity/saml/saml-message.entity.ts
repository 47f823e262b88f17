import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * The one-time messages of SAML sign-in, per identity provider: an AuthnRequest id awaiting its
 * response (`request`, consumed by the response that names it in InResponseTo) and an assertion id
 * already accepted (`assertion`, kept until the assertion expires so a replay is refused). Keyed
 * `<kind>:<idp>:<message id>`.
 */
@Entity({ name: 'saml_message' })
@Index('saml_message_expires_idx', ['expiresAt'])
export class SamlMessageEntity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ type: 'text' })
  kind: 'request' | 'assertion';

  @Column({ type: 'text' })
  idp: string;

  @Column({ type: 'text', default: '' })
  value: string;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
