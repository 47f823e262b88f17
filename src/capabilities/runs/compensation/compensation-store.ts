import type { EntityManager } from 'typeorm';
import type { TenantScope } from '../../../platform/identity/principal';
import { rowsOf } from '../../../platform/database/rows';
import { UUID } from '../../../platform/ids';
import type { PlanEntry, PlanStatus } from './run-compensation.entity';

/** A plan as the unwind and the operators read it. */
export interface Plan {
  runId: string;
  tenant: string;
  workspace: string | null;
  status: PlanStatus;
  trigger: string;
  planVersion: number;
  profileVersion: string;
  orderingModel: string;
  exhaustedDisposition: string;
  entries: PlanEntry[];
  revision: number;
}

interface Row {
  run_id: string;
  tenant: string;
  workspace: string | null;
  status: PlanStatus;
  trigger: string;
  plan_version: number;
  profile_version: string;
  ordering_model: string;
  exhausted_disposition: string;
  entries: PlanEntry[];
  revision: number;
}

const COLUMNS = `"run_id", "tenant", "workspace", "status", "trigger", "plan_version", "profile_version", "ordering_model", "exhausted_disposition", "entries", "revision"`;

const planOf = (r: Row): Plan => ({
  runId: r.run_id,
  tenant: r.tenant,
  workspace: r.workspace,
  status: r.status,
  trigger: r.trigger,
  planVersion: Number(r.plan_version),
  profileVersion: r.profile_version,
  orderingModel: r.ordering_model,
  exhaustedDisposition: r.exhausted_disposition,
  entries: r.entries,
  revision: Number(r.revision),
});

/**
 * The one writer of `run_compensation`. A plan is inserted once per run (a second mint of the same
 * run, after a takeover, finds it); an unwind takes the plan's lease before executing it; every
 * change is conditional on the revision it was read at, so an operator and an unwind never both win.
 */
export const compensationStore = {
  /** Inserts the plan unless the run has one; the plan the run has either way. */
  async insert(m: EntityManager, p: Omit<Plan, 'revision'>): Promise<{ plan: Plan; inserted: boolean }> {
    const rows = rowsOf<Row>(await m.query(
      `INSERT INTO "run_compensation" ("run_id", "tenant", "workspace", "status", "trigger", "plan_version", "profile_version", "ordering_model", "exhausted_disposition", "entries")
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb) ON CONFLICT ("run_id") DO NOTHING RETURNING ${COLUMNS}`,
      [p.runId, p.tenant, p.workspace, p.status, p.trigger, p.planVersion, p.profileVersion, p.orderingModel, p.exhaustedDisposition, JSON.stringify(p.entries)],
    ));
    if (rows.length) return { plan: planOf(rows[0]), inserted: true };
    return { plan: (await this.get(m, { tenant: p.tenant }, p.runId))!, inserted: false };
  },

  /** The plan of a run of the scope's tenant (and workspace, when the scope has one). */
  async get(m: EntityManager, scope: TenantScope, runId: string): Promise<Plan | undefined> {
    if (!UUID.test(runId)) return undefined;
    const rows = (await m.query(`SELECT ${COLUMNS} FROM "run_compensation" WHERE "run_id" = $1 AND "tenant" = $2 AND ($3::text IS NULL OR "workspace" = $3)`, [runId, scope.tenant, scope.workspace ?? null])) as Row[];
    return rows.length ? planOf(rows[0]) : undefined;
  },

  /** The rollup of each run that has a plan (runs without one are `none`). */
  async statuses(m: EntityManager, tenant: string, runIds: string[]): Promise<Map<string, PlanStatus>> {
    const ids = runIds.filter((id) => UUID.test(id));
    if (!ids.length) return new Map();
    const rows = (await m.query(`SELECT "run_id", "status" FROM "run_compensation" WHERE "tenant" = $1 AND "run_id" = ANY($2::uuid[])`, [tenant, ids])) as Array<{ run_id: string; status: PlanStatus }>;
    return new Map(rows.map((r) => [r.run_id, r.status]));
  },

  /** Takes the lease of an active plan (pending or running) nobody holds, or whose holder's lease ran out. */
  async claim(m: EntityManager, runId: string, owner: string, leaseMs: number): Promise<Plan | undefined> {
    const rows = rowsOf<Row>(await m.query(
      `UPDATE "run_compensation" SET "lease_owner" = $2, "lease_until" = now() + make_interval(secs => $3::double precision / 1000), "revision" = "revision" + 1
       WHERE "run_id" = $1 AND "status" IN ('pending', 'running') AND ("lease_until" IS NULL OR "lease_until" < now() OR "lease_owner" = $2) RETURNING ${COLUMNS}`,
      [runId, owner, leaseMs],
    ));
    return rows.length ? planOf(rows[0]) : undefined;
  },

  /** Writes the plan's status and entries if nobody changed it since `plan.revision`; the new revision, or undefined. */
  async save(m: EntityManager, plan: Plan, opts: { owner?: string; leaseMs?: number; release?: boolean } = {}): Promise<number | undefined> {
    const rows = rowsOf<{ revision: number }>(await m.query(
      `UPDATE "run_compensation" SET "status" = $3, "entries" = $4::jsonb, "plan_version" = $5, "revision" = "revision" + 1, "updated_at" = now(),
         "lease_owner" = CASE WHEN $6::boolean THEN NULL ELSE "lease_owner" END,
         "lease_until" = CASE WHEN $6::boolean THEN NULL WHEN $7::double precision IS NULL THEN "lease_until" ELSE now() + make_interval(secs => $7::double precision / 1000) END
       WHERE "run_id" = $1 AND "revision" = $2 RETURNING "revision"`,
      [plan.runId, plan.revision, plan.status, JSON.stringify(plan.entries), plan.planVersion, opts.release === true, opts.owner && opts.leaseMs ? opts.leaseMs : null],
    ));
    return rows.length ? Number(rows[0].revision) : undefined;
  },

  /** Active plans no unwind holds (none started, or its holder stopped): the resume pass's work. */
  async orphaned(m: EntityManager, limit: number): Promise<string[]> {
    const rows = (await m.query(`SELECT "run_id" FROM "run_compensation" WHERE "status" IN ('pending', 'running') AND ("lease_until" IS NULL OR "lease_until" < now()) ORDER BY "lease_until" NULLS FIRST LIMIT $1`, [limit])) as Array<{ run_id: string }>;
    return rows.map((r) => r.run_id);
  },

  /** Retention's deletion of the plans of the runs it deletes (relation `runs`: "tenant", "id"), a part of its batch statement. */
  purgeSql(runs: string): string {
    return `DELETE FROM "run_compensation" c USING ${runs} d WHERE c."run_id" = d."id" RETURNING 1`;
  },
};
