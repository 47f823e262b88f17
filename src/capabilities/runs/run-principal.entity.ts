import { Column, Entity, Generated, Index, PrimaryColumn } from 'typeorm';

/**
 * Who started runs, stored once per tenant and content (migration 1765300010000): the owner's v2
 * subject and the starter's scopes, which a run refers to by `run.principal_key` (migration 1765430030000) instead of holding
 * them. The runs one credential starts share a row; the key starts with the tenant, as the stored
 * definitions' does. Written only by the SQL function `run_principal_ref(tenant, subject, scopes)`,
 * which each insert of a run calls (`principalRef`); never updated. Retention keeps the rows, like
 * the definitions: one per credential and scope set that started runs (docs/operations.md §Retention).
 */
@Entity({ name: 'run_principal' })
@Index('run_principal_key_uq', ['key'], { unique: true })
export class RunPrincipalEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'run_principal_pk' })
  tenant: string;

  /** SHA-256 of `[subject, scopes]` as jsonb text. */
  @PrimaryColumn({ type: 'bytea', primaryKeyConstraintName: 'run_principal_pk' })
  hash: Buffer;

  /** The owner's v2 subject (identity.md §1) as the run's creation recorded it; null for a run created without one (legacy). */
  @Column({ type: 'jsonb', nullable: true })
  subject: Record<string, unknown> | null;

  /** The starter's scopes: tool calls of the run are authorized with them, on any replica. */
  @Column({ type: 'text', array: true, nullable: true })
  scopes: string[] | null;

  /** The number a run refers to the row by (`run.principal_key`), drawn when the row is stored. */
  @Column({ type: 'bigint' })
  @Generated('increment')
  key: string;
}

/** The SQL expression that stores a run's subject and scopes (jsonb and text[] expressions) for `tenant` when new and answers their number: a run's `principal_key`. */
export const principalRef = (tenant: string, subject: string, scopes: string): string => `"run_principal_ref"(${tenant}, ${subject}, ${scopes})`;

/** The query reading one column (`subject` or `scopes`) of the principal a run row refers to (`run`: its table or alias). */
export const principalSelect = (run: string, column: 'subject' | 'scopes'): string =>
  `SELECT p."${column}" FROM "run_principal" p WHERE p."tenant" = ${run}."tenant" AND p."key" = ${run}."principal_key"`;
