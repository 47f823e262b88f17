import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * The console's single sign-on state, kept server-side: a pending sign-in (`login`: the PKCE
 * verifier and nonce of one authorization request, keyed by its state) or a signed-in session
 * (`session`: who, with which scopes, until when). Rows are keyed by the SHA-256 of the secret the
 * browser holds (the state, the session cookie), so the table alone lets no one in.
 */
@Entity({ name: 'console_session' })
@Index('console_session_expires_idx', ['expiresAt'])
export class ConsoleSessionEntity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ type: 'text' })
  kind: 'login' | 'session';

  @Column({ type: 'text', nullable: true })
  tenant: string | null;

  @Column({ type: 'text', nullable: true })
  workspace: string | null;

  @Column({ type: 'text', nullable: true })
  principal: string | null;

  @Column({ type: 'text', array: true, default: () => "'{}'" })
  scopes: string[];

  /** Where a session's person signed in: the OIDC issuer, or `saml:<provider id>`. */
  @Column({ type: 'text', nullable: true })
  issuer: string | null;

  @Column({ type: 'text', nullable: true })
  nonce: string | null;

  @Column({ type: 'text', nullable: true })
  verifier: string | null;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
