import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { rowsOf } from '../../platform/database/rows';
import { hydrateGoals } from './goal-rows';
import { GoalEntity } from './goal.entity';

/**
 * SQL: the claimed goal's arm fires a new run (nothing in flight, not paused): every slot of a
 * schedule, or a commitment whose instant has come. A heartbeat fires only on a predicate transition
 * (see `heartbeat`).
 */
const FIRES_SQL = `(g."pending_run_id" IS NULL AND g."dispatch_key" IS NULL AND NOT g."paused"
  AND (g."continuation_mode" = 'schedule' OR (g."continuation_mode" = 'commitment' AND g."commitment_at" <= $1)))`;

/**
 * The one writer of the `goal` and `goal_run` tables: every insert and update of a goal (its
 * creation, an edit, a continuation's settlement, the scheduler's claim and heartbeat) and every
 * run the ledger records is a statement of this file. Callers decide what changes; the store writes
 * it, on the data source or inside the caller's transaction (`m`).
 */
@Injectable()
export class GoalStore {
  constructor(private readonly ds: DataSource) {}

  /** A new goal (its id chosen by the caller). */
  async insert(goal: GoalEntity): Promise<void> {
    await this.ds.getRepository(GoalEntity).insert(goal as QueryDeepPartialEntity<GoalEntity>);
  }

  /** The scopes and key a goal's runs act with (its work changed: its editor delegates anew). */
  async setDelegation(m: EntityManager, g: Pick<GoalEntity, 'id' | 'tenant'>, delegation: { scopes: string[]; keyId: string | null }): Promise<void> {
    await m.getRepository(GoalEntity).update({ id: g.id, tenant: g.tenant }, { delegatedScopes: delegation.scopes, delegatedKeyId: delegation.keyId });
  }

  /** Writes every mutable column of a locked goal in one UPDATE (no read-before-write). */
  async persist(m: EntityManager, g: GoalEntity): Promise<void> {
    await m.getRepository(GoalEntity).update({ id: g.id, tenant: g.tenant }, {
      objective: g.objective,
      state: g.state,
      judge: g.judge,
      verifierRef: g.verifierRef,
      criteria: g.criteria as QueryDeepPartialEntity<GoalEntity>['criteria'],
      continuationMode: g.continuationMode,
      armRef: g.armRef,
      schedule: g.schedule as QueryDeepPartialEntity<GoalEntity>['schedule'],
      commitmentAt: g.commitmentAt,
      workflowId: g.workflowId,
      heartbeatState: g.heartbeatState as QueryDeepPartialEntity<GoalEntity>['heartbeatState'],
      worker: g.worker,
      iterations: g.iterations,
      costUsd: g.costUsd,
      contributingRunIds: g.contributingRunIds,
      lastVerdict: g.lastVerdict as QueryDeepPartialEntity<GoalEntity>['lastVerdict'],
      paused: g.paused,
      nextDueAt: g.nextDueAt,
      leaseOwner: g.leaseOwner,
      leaseExpiresAt: g.leaseExpiresAt,
      dispatchKey: g.dispatchKey,
      pendingRunId: g.pendingRunId,
      closedAt: g.closedAt,
      updatedAt: g.updatedAt,
    });
  }

  /** Writes the continuation columns of every changed (locked) goal in one UPDATE. */
  async writeContinuation(m: EntityManager, goals: GoalEntity[]): Promise<void> {
    if (!goals.length) return;
    const rows = goals.map((g) => ({
      id: g.id,
      tenant: g.tenant,
      state: g.state,
      paused: g.paused,
      arm_ref: g.armRef,
      iterations: g.iterations,
      cost_usd: g.costUsd,
      contributing_run_ids: g.contributingRunIds ?? [],
      last_verdict: g.lastVerdict,
      next_due_at: iso(g.nextDueAt),
      lease_owner: g.leaseOwner,
      lease_expires_at: iso(g.leaseExpiresAt),
      dispatch_key: g.dispatchKey,
      pending_run_id: g.pendingRunId,
      closed_at: iso(g.closedAt),
      updated_at: iso(g.updatedAt),
    }));
    await m.query(
      `UPDATE "goal" g SET "state" = v."state", "paused" = v."paused", "arm_ref" = v."arm_ref", "iterations" = v."iterations", "cost_usd" = v."cost_usd",
              "contributing_run_ids" = v."contributing_run_ids", "last_verdict" = v."last_verdict", "next_due_at" = v."next_due_at",
              "lease_owner" = v."lease_owner", "lease_expires_at" = v."lease_expires_at", "dispatch_key" = v."dispatch_key",
              "pending_run_id" = v."pending_run_id", "closed_at" = v."closed_at", "updated_at" = v."updated_at"
       FROM jsonb_to_recordset($1::jsonb) AS v("id" uuid, "tenant" text, "state" text, "paused" boolean, "arm_ref" text, "iterations" int, "cost_usd" float8,
              "contributing_run_ids" text[], "last_verdict" jsonb, "next_due_at" timestamptz, "lease_owner" text, "lease_expires_at" timestamptz,
              "dispatch_key" text, "pending_run_id" text, "closed_at" timestamptz, "updated_at" timestamptz)
       WHERE g."id" = v."id" AND g."tenant" = v."tenant"`,
      [JSON.stringify(rows)],
    );
  }

  /**
   * Records contributing runs in the goals' ledger; answers those it recorded. The primary key
   * records a run once: a run reported concurrently inserts nothing here.
   */
  async recordRuns(m: EntityManager, runRows: Array<Record<string, unknown>>): Promise<Array<{ goal_id: string; run_id: string }>> {
    return rowsOf<{ goal_id: string; run_id: string }>(
      await m.query(
        `INSERT INTO "goal_run" ("tenant", "goal_id", "run_id", "ordinal", "status", "cost_usd", "satisfied", "confidence", "recorded_at")
         SELECT r."tenant", r."goal_id", r."run_id", r."ordinal", r."status", r."cost_usd", r."satisfied", r."confidence", r."recorded_at"
         FROM jsonb_to_recordset($1::jsonb) AS r("tenant" text, "goal_id" uuid, "run_id" text, "ordinal" int, "status" text, "cost_usd" float8, "satisfied" boolean, "confidence" float8, "recorded_at" timestamptz)
         ON CONFLICT DO NOTHING RETURNING "goal_id", "run_id"`,
        [JSON.stringify(runRows)],
      ),
    );
  }

  /**
   * Claims up to `limit` due goals for `owner` until `expires` and returns them whole, in one
   * statement (rows another replica holds are skipped). The same statement reserves the next
   * idempotency key of every claimed goal whose arm fires (and spends a fired commitment), so the key is persisted
   * before any worker is asked: a replica that takes over after a crash asks again with the same
   * key instead of starting a second run.
   */
  async claimDue(now: Date, owner: string, limit: number, expires: Date): Promise<GoalEntity[]> {
    const raw = rowsOf<Record<string, unknown>>(
      await this.ds.query(
        `WITH durability AS (
           -- The claim does not wait for its WAL flush: a claim lost with a crashed database is made again
           -- identically (same leases to take, same keys, derived from the durable dispatch count), and a
           -- later synchronous commit of this session flushes it anyway.
           SELECT set_config('synchronous_commit', 'off', true)
         ), due AS (
           SELECT "id" FROM "goal"
           WHERE "state" = 'active' AND "next_due_at" <= $1 AND ("lease_expires_at" IS NULL OR "lease_expires_at" <= $1)
           ORDER BY "next_due_at"
           LIMIT $2
           FOR UPDATE SKIP LOCKED
         )
         UPDATE "goal" g SET "lease_owner" = $3, "lease_expires_at" = $4,
           "dispatch_key" = CASE WHEN ${FIRES_SQL} THEN g."id"::text || ':' || (g."dispatch_count" + 1) ELSE g."dispatch_key" END,
           "dispatch_count" = CASE WHEN ${FIRES_SQL} THEN g."dispatch_count" + 1 ELSE g."dispatch_count" END,
           -- A commitment fires once: the claim that reserves its run spends it.
           "commitment_at" = CASE WHEN ${FIRES_SQL} AND g."continuation_mode" = 'commitment' THEN NULL ELSE g."commitment_at" END
         FROM due, durability WHERE g."id" = due."id"
         RETURNING g.*`,
        [now, limit, owner, expires],
      ),
    );
    return hydrateGoals(this.ds, raw);
  }

  /**
   * A heartbeat's observed state of a goal `owner` still holds, reserving the next idempotency key
   * when `enqueue` (a transition starts a run): the key, null when none was reserved, nothing when
   * the goal is no longer this owner's active heartbeat goal free to dispatch.
   */
  async heartbeat(goalId: string, owner: string, state: unknown, enqueue: boolean): Promise<Array<{ dispatch_key: string | null }>> {
    return rowsOf<{ dispatch_key: string | null }>(
      await this.ds.query(
        `UPDATE "goal" g SET "heartbeat_state" = $3::jsonb,
           "dispatch_key" = CASE WHEN $4 THEN g."id"::text || ':' || (g."dispatch_count" + 1) ELSE NULL END,
           "dispatch_count" = CASE WHEN $4 THEN g."dispatch_count" + 1 ELSE g."dispatch_count" END
         WHERE g."id" = $1 AND g."lease_owner" = $2 AND g."state" = 'active' AND NOT g."paused" AND g."continuation_mode" = 'heartbeat'
           AND g."dispatch_key" IS NULL AND g."pending_run_id" IS NULL
         RETURNING g."dispatch_key"`,
        [goalId, owner, JSON.stringify(state), enqueue],
      ),
    );
  }
}

function iso(d: Date | null | undefined): string | null {
  return d ? new Date(d).toISOString() : null;
}
