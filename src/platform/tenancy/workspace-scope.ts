import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import type { TenantScope } from '../identity/principal';

/**
 * The one rule of tenant isolation, in the three forms queries take: a caller sees the rows of its
 * tenant and, when its credential is bound to a workspace, only that workspace's rows (a tenant-level
 * caller sees every workspace of its tenant). Another tenant's or workspace's row then answers
 * exactly like a row that does not exist.
 *
 * The workspace condition is left out, never written as `workspace = undefined`: TypeORM 1.x refuses
 * an undefined value in a `where`, and an `IS NULL` would hide every workspace's rows from a
 * tenant-level caller.
 */

/** Where the workspace lives in a table: `workspace` (null for the whole tenant) or `workspace_key` ('' for it). */
export type WorkspaceColumn = 'workspace' | 'workspace_key';

/** A `where` for `find`/`findOne`: the given fields, the caller's tenant and, when it has one, its workspace. */
export function inScope<W extends object = Record<never, never>>(scope: TenantScope, fields?: W): W & { tenant: string; workspace?: string } {
  return { ...(fields as W), tenant: scope.tenant, ...(scope.workspace ? { workspace: scope.workspace } : {}) };
}

/**
 * Narrows a select query to the caller's scope, on the query's main alias. Call it after `where()`
 * (which replaces every condition before it) and before pagination adds its own.
 */
export function scopedQuery<Q extends SelectQueryBuilder<ObjectLiteral>>(qb: Q, scope: TenantScope, workspaceColumn: WorkspaceColumn = 'workspace'): Q {
  qb.andWhere(`${qb.alias}.tenant = :scopeTenant`, { scopeTenant: scope.tenant });
  if (scope.workspace) qb.andWhere(`${qb.alias}.${workspaceColumn} = :scopeWorkspace`, { scopeWorkspace: scope.workspace });
  return qb;
}

/**
 * The same condition for a plain SQL statement: `"tenant" = $n`, and `AND "workspace" = $m` when the
 * caller has a workspace, with the values appended to `params` (so the placeholders follow the
 * statement's own). `alias` qualifies the columns when the statement joins tables.
 */
export function scopeCondition(scope: TenantScope, params: unknown[], opts: { alias?: string; workspaceColumn?: WorkspaceColumn } = {}): string {
  const col = (name: string) => (opts.alias ? `${opts.alias}."${name}"` : `"${name}"`);
  params.push(scope.tenant);
  let sql = `${col('tenant')} = $${params.length}`;
  if (scope.workspace) {
    params.push(scope.workspace);
    sql += ` AND ${col(opts.workspaceColumn ?? 'workspace')} = $${params.length}`;
  }
  return sql;
}
