/**
 * The fair claim (docs/operations.md §Fair scheduling): which claimable runs a claim takes when
 * several tenants have backlogs, and how many one tenant may execute at once.
 *
 * - The tenants with claimable runs are found by a skip scan of `run_claim_tenant_idx` (one index
 *   probe per tenant, whatever their backlogs).
 * - Each tenant's active runs (claimable status, leased, lease not expired) are counted once (a
 *   materialized CTE, not per offered run) over
 *   `run_leased_idx`, which holds only leased runs: a count costs the tenant's active runs, not its backlog.
 * - Each tenant offers its oldest claimable runs (at most the claim's limit, a constant LIMIT the planner
 *   reads in index order; what its cap leaves is cut from the offers afterwards), read from
 *   `run_claim_tenant_idx` from the tenant's first entry on (see tenantFirst).
 * - The offers are taken by `active + rank` (the tenant with the fewest runs executing first, then its
 *   next oldest run), then by age: slots are shared out between tenants with backlogs, a tenant with
 *   10,000 queued runs takes one slot after another tenant's single run has taken its own.
 *
 * A claim reads O(tenants with claimable runs × limit + active runs) index entries, never a backlog.
 * The picked rows are then locked (`FOR UPDATE SKIP LOCKED`) and rechecked: a run another replica
 * claimed meanwhile is skipped, so a concurrent claim may come back short.
 */

/** The status predicate of the claim indexes (`run_claimable_idx`, `run_claim_tenant_idx`, `run_leased_idx`). */
export const CLAIM_STATUS = (a: string) => `${a}"kind" = 'workflow' AND ${a}"status" IN ('pending', 'running', 'cancelling')`;
/** A claimable run: claim status and no lease in force. */
export const claimable = (a: string) => `${CLAIM_STATUS(a)} AND (${a}"lease_expires_at" IS NULL OR ${a}"lease_expires_at" < now())`;

/**
 * How a statement reads one tenant's part of the claim indexes: `tenant >= t ... ORDER BY tenant, ...`
 * with the rows of other tenants cut afterwards, not `tenant = t ... ORDER BY created_at`. The
 * prepared statements are planned generically (a tenant is a parameter, or a column of the outer
 * row), so the planner rates `tenant = t` at one over the number of tenants: with two or three of
 * them, a scan of `run_claimable_idx` in age order filtering on the tenant looked as cheap as the
 * tenant's own entries, and read the whole backlog of the other tenant to find the quiet tenant's
 * run (10,000 index entries, 5 ms). Only `run_claim_tenant_idx` gives rows in tenant order, so it is
 * the one read, from the tenant's first entry: a handful of entries, whatever the other backlogs.
 */
export const tenantFirst = (column: string, tenant: string) => `${column} >= ${tenant}`;

/**
 * True when `tenant` (an SQL text expression) has no run in a claim status, leased or not: nothing
 * executing or queued, so a run of it inserted now is its first (a newcomer). One index entry read.
 */
export const noRunOf = (tenant: string) =>
  `(SELECT x."tenant" FROM "run" x WHERE ${tenantFirst('x."tenant"', tenant)} AND ${CLAIM_STATUS('x.')} ORDER BY x."tenant" LIMIT 1) IS DISTINCT FROM ${tenant}`;

export interface FairClaimParams {
  /** The most runs to claim (an SQL int expression). */
  limit: string;
  /** The per-tenant cap of active runs (an SQL int expression, NULL: none). */
  cap: string;
  /** Runs never claimed (an SQL uuid[] expression): the runs the statement itself writes. */
  exclude?: string;
  /**
   * Runs the statement writes (a CTE with `tenant` and `holds`: the run keeps its lease): they are
   * counted as the write leaves them, not as the snapshot saw them (a run it finishes frees its slot).
   */
  written?: string;
}

/**
 * The CTEs (without `WITH`) ending in `${name}`: the ctids of the runs a claim locks, fairly shared
 * between tenants (see above). Needs `WITH RECURSIVE` in the statement.
 */
export function fairClaimCtes(name: string, p: FairClaimParams): string {
  const notExcluded = p.exclude ? ` AND r."id" <> ALL(${p.exclude})` : '';
  const counted = p.exclude ? ` AND x."id" <> ALL(${p.exclude})` : '';
  const held = p.written ? ` + (SELECT count(*) FROM ${p.written} w WHERE w."tenant" = ${name}_t."tenant" AND w."holds")` : '';
  return `${name}_t AS (
    (SELECT r."tenant" FROM "run" r WHERE ${CLAIM_STATUS('r.')} ORDER BY r."tenant" LIMIT 1)
    UNION ALL
    SELECT (SELECT r."tenant" FROM "run" r WHERE ${CLAIM_STATUS('r.')} AND r."tenant" > ${name}_t."tenant" ORDER BY r."tenant" LIMIT 1)
    FROM ${name}_t WHERE ${name}_t."tenant" IS NOT NULL
  ),
  ${name}_a AS MATERIALIZED (
    SELECT ${name}_t."tenant", (SELECT count(*) FROM "run" x WHERE x."tenant" = ${name}_t."tenant" AND ${CLAIM_STATUS('x.')} AND x."lease_owner" IS NOT NULL
      AND x."lease_expires_at" >= now()${counted})${held} AS "active"
    FROM ${name}_t WHERE ${name}_t."tenant" IS NOT NULL
  ),
  ${name}_o AS (
    SELECT a."tenant", a."active", o."ctid", o."created_at" FROM ${name}_a a CROSS JOIN LATERAL (
      SELECT r."ctid", r."created_at", r."tenant" FROM "run" r WHERE ${tenantFirst('r."tenant"', 'a."tenant"')} AND ${claimable('r.')}${notExcluded}
      ORDER BY r."tenant", r."created_at" LIMIT ${p.limit}
    ) o WHERE o."tenant" = a."tenant"
  ),
  ${name}_r AS (SELECT o.*, row_number() OVER (PARTITION BY o."tenant" ORDER BY o."created_at") AS "rank" FROM ${name}_o o),
  ${name}_p AS (
    SELECT o."ctid" FROM ${name}_r o WHERE ${p.cap} IS NULL OR o."active" + o."rank" <= ${p.cap}
    ORDER BY o."active" + o."rank", o."created_at" LIMIT ${p.limit}
  ),
  ${name} AS (SELECT r."ctid" FROM "run" r WHERE r."ctid" = ANY(ARRAY(SELECT "ctid" FROM ${name}_p)) AND ${claimable('r.')}${notExcluded} FOR UPDATE OF r SKIP LOCKED)`;
}
