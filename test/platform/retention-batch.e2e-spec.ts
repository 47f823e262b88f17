/**
 * Retention's batch statement (src/platform/retention/retention-statement.ts): one batch claims a large
 * number of expired runs and deletes them with every row of theirs, in every table that holds one (node
 * rows, events and their stream rows, activity invocations, gates and their decisions, artifacts,
 * compensation plans, interrupt callbacks, workspace snapshot points), while the runs a keeper keeps
 * (a pending gate, an active goal's iteration, a compensation still to run) and the runs not yet expired
 * stay whole; and a batch that fails part-way, inside its statement or in the purgers' transaction after
 * it, deletes nothing at all.
 */
import { RetentionService } from '../../src/platform/retention/retention.service';
import { createTestApp, TestApp } from '../support/test-app';

/** Every table retention deletes from, with how its rows name the run (`r`: the run). */
const TABLES: Record<string, string> = {
  run: `SELECT count(*) AS n FROM "run" r WHERE r."tenant" = $1 AND (r."id" = ANY($2::uuid[]) OR $2 IS NULL)`,
  // A node row has no tenant: it is its run's; one whose run is gone is counted for every tenant (none may be left).
  run_node: `SELECT count(*) AS n FROM "run_node" x WHERE (x."run_id" = ANY($2::uuid[]) OR $2 IS NULL)
    AND (EXISTS (SELECT 1 FROM "run" r WHERE r."id" = x."run_id" AND r."tenant" = $1) OR NOT EXISTS (SELECT 1 FROM "run" r WHERE r."id" = x."run_id"))`,
  event_stream: `SELECT count(*) AS n FROM "event_stream" x WHERE x."tenant" = $1 AND (x."stream_id" = ANY($2::text[]) OR $2 IS NULL)`,
  event: `SELECT count(*) AS n FROM "event" x JOIN "event_stream" s ON s."key" = x."stream_key" WHERE s."tenant" = $1 AND (s."stream_id" = ANY($2::text[]) OR $2 IS NULL)`,
  activity_invocation: `SELECT count(*) AS n FROM "activity_invocation" x WHERE x."tenant" = $1 AND (x."run_id" = ANY($2::text[]) OR $2 IS NULL)`,
  approval: `SELECT count(*) AS n FROM "approval" x WHERE x."tenant" = $1 AND (x."run_id" = ANY($2::uuid[]) OR $2 IS NULL)`,
  approval_decision: `SELECT count(*) AS n FROM "approval_decision" x JOIN "approval" a ON a."id" = x."approval_id" WHERE x."tenant" = $1 AND (a."run_id" = ANY($2::uuid[]) OR $2 IS NULL)`,
  run_artifact: `SELECT count(*) AS n FROM "run_artifact" x WHERE x."tenant" = $1 AND (x."run_id" = ANY($2::uuid[]) OR $2 IS NULL)`,
  run_compensation: `SELECT count(*) AS n FROM "run_compensation" x WHERE x."tenant" = $1 AND (x."run_id" = ANY($2::uuid[]) OR $2 IS NULL)`,
  interrupt_callback: `SELECT count(*) AS n FROM "interrupt_callback" x WHERE x."tenant" = $1 AND (x."run_id" = ANY($2::uuid[]) OR $2 IS NULL)`,
  workspace_run_snapshot: `SELECT count(*) AS n FROM "workspace_run_snapshot" x WHERE x."tenant" = $1 AND (x."run_id" = ANY($2::text[]) OR $2 IS NULL)`,
};
/** Rows one seeded run has in each table. */
const PER_RUN: Record<string, number> = { run: 1, run_node: 2, event_stream: 1, event: 3, activity_invocation: 1, approval: 1, approval_decision: 1, run_artifact: 1, run_compensation: 1, interrupt_callback: 1, workspace_run_snapshot: 1 };
const times = (k: number) => Object.fromEntries(Object.entries(PER_RUN).map(([t, n]) => [t, n * k]));

describe('retention batch', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_RUN_RETENTION_DAYS: '10', OPENWOP_SCHEDULER_ENABLED: 'false' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** `n` runs of `tenant` finished 20 days ago (one second apart, oldest first), each with rows in every table; their ids in finish order. */
  async function seed(tenant: string, n: number): Promise<string[]> {
    const q = (sql: string) => t.ds.query(sql, [tenant]);
    await t.ds.query(
      `INSERT INTO "run" ("tenant", "kind", "status", "metadata", "created_at", "completed_at")
       SELECT $1, 'workflow', (ARRAY['completed', 'failed', 'cancelled'])[1 + i % 3], '{}'::jsonb,
              now() - interval '21 days' + i * interval '1 second', now() - interval '20 days' + i * interval '1 second'
       FROM generate_series(1, $2::int) AS i`,
      [tenant, n],
    );
    await q(`INSERT INTO "run_node" ("run_id", "node_id", "status") SELECT r."id", x, 'completed' FROM "run" r CROSS JOIN unnest(ARRAY['a', 'b']) AS x WHERE r."tenant" = $1`);
    await q(`INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") SELECT "tenant", "id"::text, 3 FROM "run" WHERE "tenant" = $1 ORDER BY "created_at"`);
    await q(`INSERT INTO "event" ("stream_key", "sequence", "tenant", "type", "payload") SELECT s."key", i, s."tenant", 'node.completed', '{}' FROM "event_stream" s CROSS JOIN generate_series(1, 3) AS i WHERE s."tenant" = $1`);
    await q(
      `INSERT INTO "activity_invocation" ("logical_invocation_id", "tenant", "run_id", "node_id", "ordinal", "provider_key", "state", "owner", "expires_at")
       SELECT 'inv-' || "id", "tenant", "id"::text, 'a', 0, 'p', 'completed', 'o', now() FROM "run" WHERE "tenant" = $1`,
    );
    await q(
      `INSERT INTO "approval" ("tenant", "subject_kind", "subject_id", "state", "required_scope", "quorum", "artifact_ref", "requested_by", "expires_at", "run_id", "node_id")
       SELECT "tenant", 'run-node', "id", 'granted', 'approvals:respond', 1, 'run:' || "id" || '#a', 'x', now() + interval '1 day', "id", 'a' FROM "run" WHERE "tenant" = $1`,
    );
    await q(`INSERT INTO "approval_decision" ("tenant", "approval_id", "principal", "decision") SELECT "tenant", "id", 'p', 'granted' FROM "approval" WHERE "tenant" = $1`);
    await q(
      `INSERT INTO "run_artifact" ("id", "tenant", "run_id", "node_id", "name", "content_type", "size_bytes", "store", "content")
       SELECT gen_random_uuid(), "tenant", "id", 'a', 'out.txt', 'text/plain', 2, 'database', 'hi'::bytea FROM "run" WHERE "tenant" = $1`,
    );
    await q(
      `INSERT INTO "run_compensation" ("run_id", "tenant", "status", "trigger", "profile_version", "ordering_model", "exhausted_disposition", "entries")
       SELECT "id", "tenant", 'completed', 'failure', '1', 'reverse', 'manual', '[]'::jsonb FROM "run" WHERE "tenant" = $1`,
    );
    await q(`INSERT INTO "interrupt_callback" ("interrupt_id", "tenant", "run_id", "node_id", "url", "status") SELECT gen_random_uuid(), "tenant", "id", 'a', 'https://example.com/cb', 'delivered' FROM "run" WHERE "tenant" = $1`);
    await q(`INSERT INTO "workspace_run_snapshot" ("tenant", "run_id", "workspace_key", "revision") SELECT "tenant", "id"::text, '', 1 FROM "run" WHERE "tenant" = $1`);
    await t.ds.query('ANALYZE');
    return ((await q(`SELECT "id" FROM "run" WHERE "tenant" = $1 ORDER BY "completed_at"`)) as Array<{ id: string }>).map((r) => r.id);
  }

  /** Rows per table of `tenant` (of its runs `ids` only, when given). */
  async function rows(tenant: string, ids?: string[]): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const [table, sql] of Object.entries(TABLES)) out[table] = Number(((await t.ds.query(sql, [tenant, ids ?? null])) as Array<{ n: string }>)[0].n);
    return out;
  }

  it('one batch deletes every row of a thousand expired runs and keeps the runs it must keep whole', async () => {
    const n = 1_500;
    const ids = await seed('big', n);
    expect(await rows('big')).toEqual(times(n));
    // Kept, spread over the page: a pending gate, an active goal's iteration, a compensation still to run;
    // and two runs that are not expired: one still running, one finished recently.
    const [gated, counted, compensating, running, recent] = [ids[10], ids[500], ids[900], ids[1200], ids[1400]];
    await t.ds.query(`UPDATE "approval" SET "state" = 'pending' WHERE "run_id" = $1`, [gated]);
    const [{ id: goal }] = (await t.ds.query(
      `INSERT INTO "goal" ("tenant", "objective", "state", "judge", "continuation_mode", "bounds", "created_at", "updated_at") VALUES ('big', 'o', 'active', 'host', 'manual', '{}'::jsonb, now(), now()) RETURNING "id"`,
    )) as Array<{ id: string }>;
    await t.ds.query(`INSERT INTO "goal_run" ("tenant", "goal_id", "run_id", "ordinal", "status", "recorded_at") VALUES ('big', $1, $2, 1, 'completed', now())`, [goal, counted]);
    await t.ds.query(`UPDATE "run_compensation" SET "status" = 'pending' WHERE "run_id" = $1`, [compensating]);
    await t.ds.query(`UPDATE "run" SET "status" = 'running', "completed_at" = NULL, "created_at" = now() WHERE "id" = $1`, [running]);
    await t.ds.query(`UPDATE "run" SET "completed_at" = now() - interval '1 day' WHERE "id" = $1`, [recent]);
    const kept = [gated, counted, compensating, running, recent];

    // A first batch of 2,000: the whole backlog in one statement, so the page comes back short and the sweep ends.
    const sweep = await t.app.get(RetentionService).sweep(undefined, { batch: 2_000, dutyPercent: 100 });
    const gone = n - kept.length;
    expect(sweep).toMatchObject({
      batches: 1,
      largestBatch: 2_000,
      backlog: false,
      runs: gone,
      runNodes: 2 * gone,
      eventStreams: gone,
      events: 3 * gone,
      activityInvocations: gone,
      approvals: gone,
      approvalDecisions: gone,
      artifacts: gone,
      compensationPlans: gone,
      interruptCallbacks: gone,
      workspaceSnapshots: gone,
    });
    // Nothing of the deleted runs is left anywhere; the kept ones have every row.
    expect(await rows('big')).toEqual(times(kept.length));
    expect(await rows('big', kept)).toEqual(times(kept.length));
    // The goal's ledger stays with the goal.
    expect((await t.ds.query(`SELECT count(*)::int AS n FROM "goal_run" WHERE "goal_id" = $1`, [goal]))[0].n).toBe(1);
  }, 120_000);

  it('a batch whose statement fails part-way deletes nothing, and the next sweep deletes it all', async () => {
    const n = 400;
    const ids = await seed('crash', n);
    // A capability's part that fails on one run in the middle of the batch, after other parts deleted theirs.
    await t.ds.query(`CREATE TABLE "retention_probe" ("run_id" uuid PRIMARY KEY, "fail" boolean NOT NULL)`);
    await t.ds.query(`INSERT INTO "retention_probe" SELECT "id", "id" = $2 FROM "run" WHERE "tenant" = $1`, ['crash', ids[n / 2]]);
    const retention = t.app.get(RetentionService);
    retention.registerRunPurger({
      counts: 'workspaceSnapshots',
      deletes: (runs) => `DELETE FROM "retention_probe" p USING ${runs} d WHERE p."run_id" = d."id" AND 1 / (CASE WHEN p."fail" THEN 0 ELSE 1 END) = 1 RETURNING 1`,
    });

    await expect(retention.sweep(undefined, { batch: 1_000, dutyPercent: 100 })).rejects.toThrow(/division by zero/);
    expect(await rows('crash')).toEqual(times(n));
    expect((await t.ds.query(`SELECT count(*)::int AS n FROM "retention_probe"`))[0].n).toBe(n);

    await t.ds.query(`UPDATE "retention_probe" SET "fail" = false`);
    const sweep = await retention.sweep(undefined, { batch: 1_000, dutyPercent: 100 });
    expect(sweep).toMatchObject({ runs: n, events: 3 * n, eventStreams: n, runNodes: 2 * n });
    expect(await rows('crash')).toEqual(times(0));
    expect((await t.ds.query(`SELECT count(*)::int AS n FROM "retention_probe"`))[0].n).toBe(0);
  }, 120_000);

  it('a batch whose transaction fails after its statement (a purger that deletes by itself) deletes nothing', async () => {
    const n = 300;
    await seed('tx', n);
    const retention = t.app.get(RetentionService);
    let fail = true;
    const given: string[] = [];
    retention.registerRunPurger({
      counts: 'artifacts',
      purge: async (m, runs) => {
        // Runs after the batch's statement, in its transaction: the run rows are gone already.
        expect((await m.query(`SELECT count(*)::int AS n FROM "run" WHERE "id" = ANY($1::uuid[])`, [runs.map((r) => r.id)]))[0].n).toBe(0);
        if (fail) throw new Error('purger failed');
        given.push(...runs.filter((r) => r.tenant === 'tx').map((r) => r.id));
        return { deleted: 0 };
      },
    });

    await expect(retention.sweep(undefined, { batch: 1_000, dutyPercent: 100 })).rejects.toThrow('purger failed');
    expect(await rows('tx')).toEqual(times(n));

    fail = false;
    expect(await retention.sweep(undefined, { batch: 1_000, dutyPercent: 100 })).toMatchObject({ runs: n, events: 3 * n });
    expect(await rows('tx')).toEqual(times(0));
    expect(given).toHaveLength(n);
  }, 120_000);
});
