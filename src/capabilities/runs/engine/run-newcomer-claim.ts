import type { DataSource } from 'typeorm';
import { RUNS_CHANNEL } from '../../../platform/database/database-notifications';
import { preparedStatement, runPrepared } from '../../../platform/database/prepared-statement';
import { CLAIM_STATUS, claimable, tenantFirst } from './run-claim-sql';
import { ClaimedRow, returning } from './run-store';

/**
 * The newcomers' claims of fair scheduling (docs/operations.md §Fair scheduling) that name their
 * runs: a run announced with its id (an insert that could not claim it, see `announcement`) is
 * claimed by its primary key into the newcomers' reserve, one index lookup and two index probes,
 * instead of the fair claim's pass over every tenant with claimable runs.
 */

/**
 * The payload of the runs channel's notification for one announced run (SQL, from the run's id and
 * tenant expressions): its id, a space, its tenant (at most 200 characters: a hint, see namedRun).
 * A notification without a payload (a batch of runs, a released lease) names none.
 */
export const announcement = (id: string, tenant: string) => `pg_notify('${RUNS_CHANNEL}', ${id}::text || ' ' || left(${tenant}::text, 200))`;

/** The run a notification names (see announcement), if any: its id, and its tenant (maybe cut short, so only a hint). */
export function namedRun(payload: string | undefined): { runId: string; tenant: string } | undefined {
  if (!payload || payload.length < 38 || payload[36] !== ' ') return undefined;
  const runId = payload.slice(0, 36);
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(runId) ? { runId, tenant: payload.slice(37) } : undefined;
}

/**
 * Claims, for owner $2 (lease $3 ms), at most $4 of the runs $1 that a newcomers' claim may take:
 * claimable, of a tenant with no run executing anywhere (no lease in force: `run_leased_idx`), and
 * its tenant's oldest claimable run (the first claimable entry from the tenant's first one on in
 * `run_claim_tenant_idx`: see tenantFirst in run-claim-sql.ts), so at most one per tenant and never
 * ahead of the tenant's own older runs. The same runs the fair claim with a cap of one offers,
 * looked up by id (being that run, it is claimable: a claim status and no lease in force; left at
 * that, so the planner reads the primary key alone, not also every claimable run's entry to test
 * the row). A run locked by another claim meanwhile is skipped, and the update checks again that the
 * run it locked is claimable (another claim may have taken it since this statement's snapshot).
 */
export const CLAIM_NAMED_NEWCOMERS_SQL = `WITH c AS (
    SELECT r."ctid" FROM "run" r
    WHERE r."id" = ANY($1::uuid[])
      AND (SELECT x."tenant" FROM "run" x WHERE ${tenantFirst('x."tenant"', 'r."tenant"')} AND ${CLAIM_STATUS('x.')} AND x."lease_owner" IS NOT NULL AND x."lease_expires_at" >= now()
           ORDER BY x."tenant" LIMIT 1) IS DISTINCT FROM r."tenant"
      AND r."id" = (SELECT y."id" FROM "run" y WHERE ${tenantFirst('y."tenant"', 'r."tenant"')} AND ${claimable('y.')} ORDER BY y."tenant", y."created_at" LIMIT 1)
    ORDER BY r."created_at" LIMIT $4::int
    FOR UPDATE OF r SKIP LOCKED
  )
  UPDATE "run" r SET "lease_owner" = $2, "lease_expires_at" = now() + ($3::int * interval '1 millisecond'), "fence" = r."fence" + 1
  WHERE r."ctid" = ANY(ARRAY(SELECT "ctid" FROM c)) AND ${claimable('r.')} RETURNING ${returning('r.')}`;
const CLAIM_NAMED_NEWCOMERS = preparedStatement('run_claim_named_newcomers', CLAIM_NAMED_NEWCOMERS_SQL);

export async function claimNamedNewcomers(q: DataSource, p: { runIds: string[]; owner: string; leaseMs: number; limit: number }): Promise<ClaimedRow[]> {
  return runPrepared<ClaimedRow>(q, CLAIM_NAMED_NEWCOMERS, [p.runIds, p.owner, p.leaseMs, p.limit]);
}
