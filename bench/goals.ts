/**
 * Goal scheduler benchmark: goal iterations per second with a no-op worker and an instant judge
 * (the host judge with criteria no output satisfies, so goals stay active), 10,000 active goals, on
 * one host instance and on two instances sharing the database (the second one in its own process, as
 * a replica would be), against a baseline measured in the same run: a raw SQL claim loop (the same FOR UPDATE SKIP LOCKED claim, then one UPDATE per goal
 * that counts the iteration and re-arms it). Prints rates and ratios; a measurement, not a test.
 *
 *   SWC_NODE_PROJECT=tsconfig.json node -r @swc-node/register bench/goals.ts [goals] [secondsPerPhase]
 *
 * Uses DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) to create and drop a
 * scratch database. Each phase stops after secondsPerPhase (default 20) or when no goal is due.
 * BENCH_GOAL_TENANTS (default 20) spreads the goals over that many tenants.
 */
import 'reflect-metadata';
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { Pool } from 'pg';
import type { GoalWorkerProvider } from '@openwop-host/plugin-sdk';
import { createHost, Host } from '../src/bootstrap';
import { GoalClock } from '../src/capabilities/goals/goal-clock';
import { GoalExtensionsService } from '../src/capabilities/goals/goal-extensions.service';
import { GoalSchedulerService } from '../src/capabilities/goals/goal-scheduler.service';
import { loadHostConfig } from '../src/platform/config/host-config';
import { createBenchDatabase } from './harness';

const BATCH = 100;
/** Goals are spread over this many tenants (each tenant's host event stream serializes its appends). */
const TENANTS = Number(process.env.BENCH_GOAL_TENANTS ?? 20);

const noopWorker: GoalWorkerProvider = {
  pollIntervalMs: 1000,
  start: async () => ({ runId: randomUUID() }),
  collect: async (_g, runId) => ({ runId, status: 'completed', output: {}, costUsd: 0 }),
};


async function boot(url: string, instance: string): Promise<Host> {
  const config = loadHostConfig({
    ...process.env,
    DATABASE_URL: url,
    LOG_LEVEL: 'error',
    OPENWOP_BOOTSTRAP_KEY: 'false',
    OPENWOP_SCHEDULER_ENABLED: 'false',
    OPENWOP_INSTANCE_ID: instance,
    OPENWOP_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-bench-')),
  });
  const host = await createHost(config, { logDestination: new Writable({ write: (_c, _e, cb) => cb() }), openApi: false });
  host.app.get(GoalExtensionsService).registerWorker('noop', noopWorker);
  return host;
}

/** 10,000 active schedule goals, all due at `now`. */
async function seed(pool: Pool, count: number, now: Date): Promise<void> {
  await pool.query('TRUNCATE "goal", "goal_run", "event", "event_stream"');
  const deadline = new Date(now.getTime() + 7 * 24 * 3600 * 1000);
  for (let start = 0; start < count; start += 1000) {
    const n = Math.min(1000, count - start);
    await pool.query(
      `INSERT INTO "goal" ("id", "tenant", "principal", "objective", "state", "judge", "criteria", "continuation_mode", "arm_ref", "schedule", "worker", "bounds", "deadline_at", "next_due_at", "created_at", "updated_at")
       SELECT id, 'tenant-' || (i % $4::int), 'bench', 'bench goal', 'active', 'host', '{"not": {}}'::jsonb, 'schedule', 'goal:' || id || ':continuation',
              '{"intervalMs": 1000}'::jsonb, 'noop', '{"maxLoopIterations": 1000000, "runTimeoutMs": 604800000, "maxCostUsd": 100}'::jsonb, $2, $1, $1, $1
       FROM (SELECT gen_random_uuid() AS id, i FROM generate_series(1, $3) AS i) s`,
      [now, deadline, n, TENANTS],
    );
  }
  // Planner statistics, as autovacuum keeps them on a live table: without them the due-goal claim is
  // planned for a handful of rows and sorts every due goal on each claim (host and raw loop alike).
  await pool.query('ANALYZE "goal"');
}

async function rearm(pool: Pool, now: Date): Promise<void> {
  await pool.query(`UPDATE "goal" SET "next_due_at" = $1, "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "state" = 'active'`, [now]);
}

async function phase(label: string, limitMs: number, passes: Array<(deadline: number) => Promise<number>>): Promise<{ label: string; iterations: number; seconds: number; rate: number }> {
  const start = process.hrtime.bigint();
  const deadline = Date.now() + limitMs;
  const counts = await Promise.all(passes.map((p) => p(deadline)));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const iterations = counts.reduce((a, b) => a + b, 0);
  return { label, iterations, seconds, rate: iterations / seconds };
}

/** The host scheduler, batch after batch, until nothing is due or the phase ends. */
function hostPass(host: Host, now: Date) {
  const scheduler = host.app.get(GoalSchedulerService);
  return async (deadline: number) => {
    let recorded = 0;
    while (Date.now() < deadline) {
      const r = await scheduler.runOnce({ now, maxGoals: BATCH * 5 });
      recorded += r.recorded;
      if (!r.claimed) break;
    }
    return recorded;
  };
}

/** Baseline: the same claim, then one UPDATE per goal counting the iteration and re-arming it. */
function rawPass(pool: Pool, now: Date, owner: string, concurrency: number) {
  return async (deadline: number) => {
    let done = 0;
    const next = new Date(now.getTime() + 1000);
    while (Date.now() < deadline) {
      const claimed = await pool.query(
        `WITH due AS (SELECT "id" FROM "goal" WHERE "state" = 'active' AND "next_due_at" <= $1 AND ("lease_expires_at" IS NULL OR "lease_expires_at" <= $1)
           ORDER BY "next_due_at" LIMIT $2 FOR UPDATE SKIP LOCKED)
         UPDATE "goal" SET "lease_owner" = $3, "lease_expires_at" = $4 FROM due WHERE "goal"."id" = due."id" RETURNING "goal"."id"`,
        [now, BATCH, owner, new Date(now.getTime() + 60_000)],
      );
      if (!claimed.rowCount) break;
      const ids = claimed.rows.map((r: { id: string }) => r.id);
      let i = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (i < ids.length) {
            const id = ids[i++];
            await pool.query(
              `UPDATE "goal" SET "iterations" = "iterations" + 1, "contributing_run_ids" = array_append("contributing_run_ids", $3), "next_due_at" = $2, "lease_owner" = NULL, "lease_expires_at" = NULL
               WHERE "id" = $1 AND "lease_owner" = $4`,
              [id, next, randomUUID(), owner],
            );
            done++;
          }
        }),
      );
    }
    return done;
  };
}

/** A second host instance in its own process: boots, then works goals when told to. */
async function child(url: string, nowIso: string): Promise<void> {
  // Never outlive the benchmark that started this instance.
  process.on('disconnect', () => process.exit(0));
  const host = await boot(url, 'bench-b');
  const now = new Date(nowIso);
  host.app.get(GoalClock).useSource(() => now);
  process.on('message', (msg: { go?: number }) => {
    if (!msg.go) return;
    void hostPass(host, now)(msg.go).then(async (recorded) => {
      process.send!({ recorded });
      await host.close();
      process.exit(0);
    });
  });
  process.send!({ ready: true });
}

/** Starts the second instance in a child process; resolves once it has booted. */
async function spawnInstance(url: string, now: Date): Promise<{ run(deadline: number): Promise<number>; exited: Promise<void> }> {
  const proc = fork(__filename, ['--child', url, now.toISOString()], { execArgv: ['-r', '@swc-node/register'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  await new Promise<void>((resolve, reject) => {
    proc.once('message', () => resolve());
    proc.once('exit', (code) => reject(new Error(`bench instance exited with ${code}`)));
  });
  // The database is dropped only after this instance has closed its connections.
  const exited = new Promise<void>((resolve) => (proc.exitCode !== null ? resolve() : proc.once('exit', () => resolve())));
  return {
    exited,
    run: (deadline) =>
      new Promise<number>((resolve) => {
        proc.once('message', (m: { recorded: number }) => resolve(m.recorded));
        proc.send({ go: deadline });
      }),
  };
}

export async function main(count = Number(process.argv[2] ?? 10_000), secondsPerPhase = Number(process.argv[3] ?? 20)): Promise<void> {
  const bench = await createBenchDatabase('bench_goals');
  const url = bench.url;
  const hosts: Host[] = [];
  const pool = new Pool({ connectionString: url.toString(), max: 10 });
  try {
    const a = await boot(url.toString(), 'bench-a');
    hosts.push(a);
    const now = new Date('2026-06-13T00:00:00.000Z');
    for (const h of hosts) h.app.get(GoalClock).useSource(() => now);
    const limit = secondsPerPhase * 1000;
    const concurrency = a.config.file.goals && typeof (a.config.file.goals as { concurrency?: unknown }).concurrency === 'number' ? Number((a.config.file.goals as { concurrency: number }).concurrency) : 8;

    await seed(pool, count, now);
    const raw1 = await phase('raw SQL claim loop, 1 worker', limit, [rawPass(pool, now, 'raw-a', concurrency)]);
    await rearm(pool, now);
    const raw2 = await phase('raw SQL claim loop, 2 workers', limit, [rawPass(pool, now, 'raw-a', concurrency), rawPass(pool, now, 'raw-b', concurrency)]);

    await seed(pool, count, now);
    const one = await phase('host scheduler, 1 instance', limit, [hostPass(a, now)]);
    await rearm(pool, now);
    const b = await spawnInstance(url.toString(), now);
    const two = await phase('host scheduler, 2 instances', limit, [hostPass(a, now), (deadline) => b.run(deadline)]);
    await b.exited;

    const dupes = await pool.query(`SELECT count(*)::int AS n FROM (SELECT "payload"->>'runId' FROM "event" WHERE "type" = 'goal.evaluated' GROUP BY 1 HAVING count(*) > 1) d`);
    const rows: Array<[string, string, string, string]> = [];
    for (const r of [raw1, raw2, one, two]) rows.push([r.label, String(r.iterations), r.seconds.toFixed(2), r.rate.toFixed(0)]);
    process.stdout.write(`\nGoal scheduler benchmark: ${count} active goals, no-op worker, instant host judge\n\n`);
    process.stdout.write(`${'phase'.padEnd(34)}${'iterations'.padStart(12)}${'seconds'.padStart(10)}${'iter/s'.padStart(10)}\n`);
    for (const [l, n, s, r] of rows) process.stdout.write(`${l.padEnd(34)}${n.padStart(12)}${s.padStart(10)}${r.padStart(10)}\n`);
    process.stdout.write(`\nhost/raw, 1 instance:  ${(one.rate / raw1.rate).toFixed(3)}\n`);
    process.stdout.write(`host/raw, 2 instances: ${(two.rate / raw2.rate).toFixed(3)}\n`);
    process.stdout.write(`2 instances / 1 instance (host): ${(two.rate / one.rate).toFixed(2)}\n`);
    process.stdout.write(`runs judged twice: ${dupes.rows[0].n}\n`);
  } finally {
    await pool.end();
    for (const h of hosts.reverse()) await h.close().catch(() => undefined);
    await bench.drop();
  }
}

if (require.main === module && process.argv[2] === '--child') {
  child(process.argv[3], process.argv[4]).catch((e) => {
    process.stderr.write(`${(e as Error).stack ?? e}\n`);
    process.exit(1);
  });
} else if (require.main === module) {
  main().catch((e) => {
    process.stderr.write(`${(e as Error).stack ?? e}\n`);
    process.exit(1);
  });
}
