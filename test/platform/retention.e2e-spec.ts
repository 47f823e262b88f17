/**
 * Retention: runs finished longer ago than OPENWOP_RUN_RETENTION_DAYS are deleted with every row of
 * theirs (node rows, events, event-stream counter, activity invocations, closed gates and their
 * decisions); runs still going, recent ones, ones a pending gate names and ones an active goal
 * counts are kept; audit entries are never deleted; expired idempotency records older than
 * OPENWOP_IDEMPOTENCY_RETENTION_HOURS go; the sweep runs as a leased periodic task, in batches, and
 * logs its counts; it works a backlog off until it is empty or its time budget is spent, and a sweep
 * the budget stopped brings the next one forward.
 */
import { loadHostConfig } from '../../src/platform/config/host-config';
import { EventLogService } from '../../src/platform/events/event-log.service';
import { RETENTION_BATCH, RETENTION_TASK, RetentionService } from '../../src/platform/retention/retention.service';
import { PeriodicTaskService } from '../../src/platform/scheduler/periodic-task.service';
import { createTestApp, TestApp } from '../support/test-app';

describe('retention', () => {
  let t: TestApp;

  beforeAll(async () => {
    // The ticker is off: the test drives the sweep (and the task) itself.
    t = await createTestApp({ env: { OPENWOP_RUN_RETENTION_DAYS: '10', OPENWOP_IDEMPOTENCY_RETENTION_HOURS: '48', OPENWOP_SCHEDULER_ENABLED: 'false' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A run of `tenant` in `status`, finished `daysAgo` days ago, with a node row, two events, an invocation and a closed gate. */
  async function run(tenant: string, status: string, daysAgo: number, opts: { pendingGate?: boolean; finished?: boolean } = {}): Promise<string> {
    const [{ id }] = (await t.ds.query(
      `INSERT INTO "run" ("tenant", "kind", "status", "metadata", "created_at", "completed_at")
       VALUES ($1, 'workflow', $2, '{}'::jsonb, now() - make_interval(days => $3 + 1), CASE WHEN $4 THEN now() - make_interval(days => $3) END) RETURNING "id"`,
      [tenant, status, daysAgo, opts.finished ?? true],
    )) as Array<{ id: string }>;
    await t.ds.query(`INSERT INTO "run_node" ("run_id", "node_id", "status") VALUES ($1, 'a', 'completed')`, [id]);
    const events = t.app.get(EventLogService);
    await events.append({ tenant }, id, 'run.started', { workflowId: 'w' });
    await events.append({ tenant }, id, 'run.completed', {});
    const [{ key }] = (await t.ds.query(`SELECT "key" FROM "event_stream" WHERE "tenant" = $1 AND "stream_id" = $2`, [tenant, id])) as Array<{ key: string }>;
    streamKeys.set(id, key);
    await t.ds.query(
      `INSERT INTO "activity_invocation" ("logical_invocation_id", "tenant", "run_id", "node_id", "ordinal", "provider_key", "state", "owner", "expires_at")
       VALUES ($1, $2, $3, 'a', 0, 'p', 'completed', 'o', now())`,
      [`inv-${id}`, tenant, id],
    );
    const [{ id: gate }] = (await t.ds.query(
      `INSERT INTO "approval" ("tenant", "subject_kind", "subject_id", "state", "required_scope", "quorum", "artifact_ref", "requested_by", "expires_at", "run_id", "node_id")
       VALUES ($1, 'run-node', $2, $3, 'approvals:respond', 1, $4, 'x', now() + interval '1 day', $2, 'a') RETURNING "id"`,
      [tenant, id, opts.pendingGate ? 'pending' : 'granted', `run:${id}#a`],
    )) as Array<{ id: string }>;
    await t.ds.query(`INSERT INTO "approval_decision" ("tenant", "approval_id", "principal", "decision") VALUES ($1, $2, 'p', 'granted')`, [tenant, gate]);
    return id;
  }

  /** Each run's stream key, as written (its events are stored under it: they must go with the stream row). */
  const streamKeys = new Map<string, string>();

  async function left(id: string): Promise<Record<string, number>> {
    const count = async (sql: string, params: unknown[] = [id]) => Number(((await t.ds.query(sql, params)) as Array<{ n: string }>)[0].n);
    return {
      run: await count(`SELECT count(*) AS n FROM "run" WHERE "id" = $1`),
      runNode: await count(`SELECT count(*) AS n FROM "run_node" WHERE "run_id" = $1`),
      event: await count(`SELECT count(*) AS n FROM "event" WHERE "stream_key" = $1::bigint`, [streamKeys.get(id)]),
      eventStream: await count(`SELECT count(*) AS n FROM "event_stream" WHERE "stream_id" = $1::text`),
      invocation: await count(`SELECT count(*) AS n FROM "activity_invocation" WHERE "run_id" = $1::text`),
      approval: await count(`SELECT count(*) AS n FROM "approval" WHERE "run_id" = $1`),
      decision: await count(`SELECT count(*) AS n FROM "approval_decision" d JOIN "approval" a ON a."id" = d."approval_id" WHERE a."run_id" = $1`),
    };
  }

  const ALL = { run: 1, runNode: 1, event: 2, eventStream: 1, invocation: 1, approval: 1, decision: 1 };
  const NONE = { run: 0, runNode: 0, event: 0, eventStream: 0, invocation: 0, approval: 0, decision: 0 };

  it('refuses retention settings below the floors', () => {
    expect(() => loadHostConfig({ OPENWOP_RUN_RETENTION_DAYS: '6' })).toThrow(/OPENWOP_RUN_RETENTION_DAYS must be between 7/);
    expect(() => loadHostConfig({ OPENWOP_IDEMPOTENCY_RETENTION_HOURS: '23' })).toThrow(/OPENWOP_IDEMPOTENCY_RETENTION_HOURS must be between 24/);
    expect(loadHostConfig({}).retention).toEqual({ runDays: 30, idempotencyHours: 168, sweepBudgetMs: 300_000, sweepDutyPercent: 50, catchUpMs: 60_000, batchTargetMs: 50 });
    // A batch aims at 200 ms on a server, 50 ms on the embedded engine (whose statements hold the host's event loop).
    expect(loadHostConfig({ DATABASE_URL: 'postgres://h/db' }).retention.batchTargetMs).toBe(200);
    expect(() => loadHostConfig({ OPENWOP_RETENTION_BATCH_MS: '5' })).toThrow(/OPENWOP_RETENTION_BATCH_MS must be between 10/);
    expect(() => loadHostConfig({ OPENWOP_RETENTION_SWEEP_BUDGET_MS: '999' })).toThrow(/OPENWOP_RETENTION_SWEEP_BUDGET_MS must be between 1000/);
    expect(() => loadHostConfig({ OPENWOP_RETENTION_SWEEP_DUTY_PERCENT: '0' })).toThrow(/OPENWOP_RETENTION_SWEEP_DUTY_PERCENT must be between 1 and 100/);
    expect(() => loadHostConfig({ OPENWOP_RETENTION_CATCH_UP_MS: '500' })).toThrow(/OPENWOP_RETENTION_CATCH_UP_MS must be between 1000/);
  });

  it('deletes old finished runs with all their rows and keeps every run it must keep, and the audit log', async () => {
    const doomed = await Promise.all(['completed', 'failed', 'cancelled'].map((s) => run('ret-a', s, 11)));
    const running = await run('ret-a', 'running', 40, { finished: false });
    const waiting = await run('ret-a', 'waiting-approval', 40, { finished: false });
    const recent = await run('ret-a', 'completed', 9);
    const gated = await run('ret-a', 'completed', 40, { pendingGate: true });
    const otherTenant = await run('ret-b', 'completed', 11);
    // An active goal counts this old run among its iterations; an abandoned goal's run may go.
    const counted = await run('ret-a', 'completed', 40);
    const uncounted = await run('ret-a', 'completed', 40);
    for (const [state, runId] of [['active', counted], ['abandoned', uncounted]] as const) {
      const [{ id: goal }] = (await t.ds.query(`INSERT INTO "goal" ("tenant", "objective", "state", "judge", "continuation_mode", "bounds", "created_at", "updated_at") VALUES ('ret-a', 'o', $1, 'host', 'manual', '{}'::jsonb, now(), now()) RETURNING "id"`, [state])) as Array<{ id: string }>;
      await t.ds.query(`INSERT INTO "goal_run" ("tenant", "goal_id", "run_id", "ordinal", "status", "recorded_at") VALUES ('ret-a', $1, $2, 1, 'completed', now())`, [goal, runId]);
    }
    // Audit entries exist for this tenant (a key mint) and outlive the sweep.
    await t.key({ tenant: 'ret-a', roles: ['admin'] });
    const auditBefore = await t.ds.query(`SELECT "seq", "hash" FROM "audit_entry" WHERE "tenant" = 'ret-a' ORDER BY "seq"`);
    expect(auditBefore.length).toBeGreaterThan(0);

    for (const id of [...doomed, running, waiting, recent, gated, otherTenant, counted, uncounted]) expect(await left(id)).toEqual(ALL);
    const counts = await t.app.get(RetentionService).sweep();

    for (const id of [...doomed, otherTenant, uncounted]) expect(await left(id)).toEqual(NONE);
    for (const id of [running, waiting, recent, gated, counted]) expect(await left(id)).toEqual(ALL);
    expect(counts).toMatchObject({ runs: 5, runNodes: 5, events: 10, eventStreams: 5, activityInvocations: 5, approvals: 5, approvalDecisions: 5 });
    expect(await t.ds.query(`SELECT "seq", "hash" FROM "audit_entry" WHERE "tenant" = 'ret-a' ORDER BY "seq"`)).toEqual(auditBefore);
    const line = t.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'retention sweep');
    expect(line).toMatchObject({ runs: 5, events: 10, runRetentionDays: 10, idempotencyRetentionHours: 48 });
    // The goal's ledger stays with the goal, even for a deleted run.
    expect((await t.ds.query(`SELECT 1 FROM "goal_run" WHERE "run_id" = $1`, [uncounted])).length).toBe(1);
  });

  it('deletes in bounded batches until nothing is left', async () => {
    const n = RETENTION_BATCH * 2 + 7;
    await t.ds.query(
      `INSERT INTO "run" ("tenant", "kind", "status", "metadata", "created_at", "completed_at")
       SELECT 'ret-bulk', 'workflow', 'completed', '{}'::jsonb, now() - interval '30 days', now() - interval '30 days' FROM generate_series(1, $1)`,
      [n],
    );
    const counts = await t.app.get(RetentionService).sweep();
    expect(counts.runs).toBe(n);
    expect((await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "tenant" = 'ret-bulk'`))[0].n).toBe(0);
  });

  /** `n` bare finished runs of `tenant`, finished `daysAgo` days ago (no rows of their own). */
  const bulk = (tenant: string, n: number, daysAgo = 30) =>
    t.ds.query(
      `INSERT INTO "run" ("tenant", "kind", "status", "metadata", "created_at", "completed_at")
       SELECT $1, 'workflow', 'completed', '{}'::jsonb, now() - make_interval(days => $3), now() - make_interval(days => $3) FROM generate_series(1, $2)`,
      [tenant, n, daysAgo],
    );
  const remaining = async (tenant: string) => (await t.ds.query(`SELECT count(*)::int AS n FROM "run" WHERE "tenant" = $1`, [tenant]))[0].n as number;

  it('works off a backlog larger than the 200 batches a sweep used to stop at, in one sweep within its budget, keepers still holding', async () => {
    // 20,000 runs was the most one sweep deleted before (200 batches of 100).
    const n = 20_057;
    await bulk('ret-huge', n);
    const gated = await run('ret-huge', 'completed', 40, { pendingGate: true });
    const counted = await run('ret-huge', 'completed', 40);
    const [{ id: goal }] = (await t.ds.query(`INSERT INTO "goal" ("tenant", "objective", "state", "judge", "continuation_mode", "bounds", "created_at", "updated_at") VALUES ('ret-huge', 'o', 'active', 'host', 'manual', '{}'::jsonb, now(), now()) RETURNING "id"`)) as Array<{ id: string }>;
    await t.ds.query(`INSERT INTO "goal_run" ("tenant", "goal_id", "run_id", "ordinal", "status", "recorded_at") VALUES ('ret-huge', $1, $2, 1, 'completed', now())`, [goal, counted]);
    const budgetMs = 180_000;
    // No pauses (a duty share of 100%), so the test takes the deleting time only.
    const sweep = await t.app.get(RetentionService).sweep(undefined, { budgetMs, dutyPercent: 100 });
    expect(sweep).toMatchObject({ runs: n, backlog: false });
    expect(sweep.durationMs).toBeLessThan(budgetMs);
    expect(await remaining('ret-huge')).toBe(2);
    for (const id of [gated, counted]) expect(await left(id)).toEqual(ALL);
  }, 240_000);

  it('stops at its time budget with the backlog left, pausing for its duty share, and brings the next sweep forward', async () => {
    // Its own replica: a 1 s budget of which 1% is spent deleting, so the pause after the first batch outlasts the budget.
    const paced = await createTestApp({
      database: t.databaseName,
      env: { OPENWOP_RUN_RETENTION_DAYS: '10', OPENWOP_SCHEDULER_ENABLED: 'false', OPENWOP_RETENTION_SWEEP_BUDGET_MS: '1000', OPENWOP_RETENTION_SWEEP_DUTY_PERCENT: '1', OPENWOP_RETENTION_CATCH_UP_MS: '90000' },
    });
    // Each batch of this replica takes at least 15 ms, so its 99-fold pause outlasts the budget: a fast
    // machine deleted a batch of 500 in under 10 ms, and the pause then let further batches in.
    const pacedRetention = paced.app.get(RetentionService) as unknown as { runBatch: (...a: unknown[]) => Promise<unknown> };
    const runBatch = pacedRetention.runBatch.bind(pacedRetention);
    pacedRetention.runBatch = async (...a: unknown[]) => {
      const [page] = await Promise.all([runBatch(...a), new Promise((r) => setTimeout(r, 15))]);
      return page;
    };
    try {
      // Older than the kept runs earlier tests left: the head of the expiry index, so each batch's page is these runs only.
      await bulk('ret-paced', RETENTION_BATCH * 5, 400);
      const sweep = await paced.app.get(RetentionService).sweep();
      expect(sweep).toMatchObject({ runs: RETENTION_BATCH, backlog: true });
      expect(sweep.durationMs).toBeGreaterThanOrEqual(990);
      expect(await remaining('ret-paced')).toBe(RETENTION_BATCH * 4);
      // As the periodic task: one more batch, and the next slot in 90 s rather than the hour.
      const tasks = paced.app.get(PeriodicTaskService);
      await tasks.trigger(RETENTION_TASK);
      await tasks.tick();
      expect(await remaining('ret-paced')).toBe(RETENTION_BATCH * 3);
      const [row] = await t.ds.query(
        `SELECT "last_error", "next_run_at" BETWEEN now() + interval '80 seconds' AND now() + interval '95 seconds' AS "soon" FROM "scheduled_task" WHERE "name" = $1`,
        [RETENTION_TASK],
      );
      expect(row).toEqual({ last_error: null, soon: true });
      // A sweep with no budget left to stop it empties the backlog and says so.
      expect(await t.app.get(RetentionService).sweep()).toMatchObject({ runs: RETENTION_BATCH * 3, backlog: false });
    } finally {
      await paced.close();
    }
  });

  it('deletes idempotency records past their retention, never one still answering replays or leased', async () => {
    const insert = (key: string, ageHours: number, expiresInHours: number, leaseHours: number | null) =>
      t.ds.query(
        `INSERT INTO "idempotency_record" ("tenant", "endpoint", "idempotency_key", "request_digest", "state", "lease_owner", "lease_expires_at", "created_at", "expires_at")
         VALUES ('ret-i', 'cancelRun', $1, 'd', 'completed', NULL, CASE WHEN $4::int IS NULL THEN NULL ELSE now() + make_interval(hours => $4::int) END,
                 now() - make_interval(hours => $2), now() + make_interval(hours => $3))`,
        [key, ageHours, expiresInHours, leaseHours],
      );
    await insert('old', 49, -25, null);
    await insert('young', 47, -23, null);
    await insert('old-but-replaying', 49, 1, null);
    await insert('old-but-leased', 49, -25, 1);
    const counts = await t.app.get(RetentionService).sweep();
    expect(counts.idempotencyRecords).toBe(1);
    const keys = (await t.ds.query(`SELECT "idempotency_key" AS k FROM "idempotency_record" WHERE "tenant" = 'ret-i' ORDER BY 1`)).map((r: { k: string }) => r.k);
    expect(keys).toEqual(['old-but-leased', 'old-but-replaying', 'young']);
  });

  it('runs as a leased periodic task: one replica per slot', async () => {
    const other = await createTestApp({ database: t.databaseName, env: { OPENWOP_RUN_RETENTION_DAYS: '10', OPENWOP_SCHEDULER_ENABLED: 'false' } });
    try {
      const sweeps = () => [...t.logs, ...other.logs].filter((l) => JSON.parse(l).msg === 'retention sweep').length;
      const old = await run('ret-c', 'completed', 20);
      const tasks = [t, other].map((x) => x.app.get(PeriodicTaskService));
      await tasks[0].trigger(RETENTION_TASK);
      const before = sweeps();
      await Promise.all(tasks.map((s) => s.tick()));
      // The slot ran once, on one replica, and did its work.
      expect(sweeps()).toBe(before + 1);
      expect(await left(old)).toEqual(NONE);
      const [row] = await t.ds.query(`SELECT "last_run_at", "last_error", "lease_owner", "next_run_at" > now() + interval '50 minutes' AS "later" FROM "scheduled_task" WHERE "name" = $1`, [RETENTION_TASK]);
      expect(row).toMatchObject({ last_error: null, lease_owner: null, later: true });
      // Not due again until the next hour.
      await Promise.all(tasks.map((s) => s.tick()));
      expect(sweeps()).toBe(before + 1);
    } finally {
      await other.close();
    }
  });
});
