import { Column, Entity, Generated, Index, PrimaryColumn } from 'typeorm';

/**
 * A workflow definition as runs executed it, stored once per tenant and content (migration
 * 1765300000000): a run keeps its number (`run.definition_key`, migration 1765430030000) instead of a copy. The key starts with
 * the tenant, so a run can only name a definition of its own tenant, and the same chain run by two
 * tenants is two rows. Written only by the SQL function `run_definition_ref(tenant, definition)`,
 * which each insert of a run calls (`definitionRef`); never updated. Retention keeps the rows: there
 * is one per distinct definition a tenant has run, which grows with the chain versions installed for
 * it, not with its runs (docs/operations.md §Retention).
 */
@Entity({ name: 'run_definition' })
@Index('run_definition_key_uq', ['key'], { unique: true })
export class RunDefinitionEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'run_definition_pk' })
  tenant: string;

  /** SHA-256 of the definition's jsonb text. */
  @PrimaryColumn({ type: 'bytea', primaryKeyConstraintName: 'run_definition_pk' })
  hash: Buffer;

  @Column({ type: 'jsonb' })
  definition: Record<string, unknown>;

  /** The number a run refers to the row by (`run.definition_key`), drawn when the row is stored. */
  @Column({ type: 'bigint' })
  @Generated('increment')
  key: string;
}

/**
 * The SQL expression that stores a definition (`definition`, a jsonb expression) for `tenant` when it
 * is not stored yet and answers its number: the value of a run's `definition_key`.
 */
export const definitionRef = (tenant: string, definition: string): string => `"run_definition_ref"(${tenant}, ${definition})`;

/** The query reading the definition a run row refers to (`run`: the row's table or alias, e.g. `r` or `"run"`). */
export const definitionSelect = (run: string): string => `SELECT d."definition" FROM "run_definition" d WHERE d."tenant" = ${run}."tenant" AND d."key" = ${run}."definition_key"`;
