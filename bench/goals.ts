/**
 * Goal scheduler benchmark: goal iterations per second with a no-op worker and an instant judge
 * (the host judge with criteria no output satisfies, so goals stay active), 10,000 active goals, on
 * one host instance and on two instances sharing the database (the second one in its own process, as
 * a replica would be), against a baseline measured in the same run: a raw SQL claim loop (the same FOR UPDATE SKIP LOCKED claim, then one UPDATE per goal
 * that counts the iteration and re-arms it). Prints rates and ratios; a measurement, not a test.
 *
 *   npm run bench -- goals [goals] [secondsPerPhase]
 *
 * Uses DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) to create and drop a
 * scratch database. Each phase warms up (a quarter of its length, at least 2 s, not counted), then
 * counts iterations for secondsPerPhase (default 10) while measuring how busy the machine's cores
 * are: when nothing is due, a pass moves its goal clock one interval on and works every goal again.
 * The host phases alternate (one instance, two, one, two) and each figure combines its two windows.
 * BENCH_GOAL_TENANTS (default 20) spreads the goals over that many tenants.
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import type { GoalWorkerProvider } from '@openwop-host/plugin-sdk';
import type { Host } from '../src/bootstrap';
import { GoalClock } from '../src/capabilities/goals/goal-clock';
import { GoalExtensionsService } from '../src/capabilities/goals/goal-extensions.service';
import { GoalSchedulerService } from '../src/capabilities/goals/goal-scheduler.service';
import { bootQuietHost, cpuMeter, CpuReading, createBenchDatabase, forkReplica, formatCpu, runBenchmark, serveReplica } from './harness';

const BATCH = 100;
/** The goals' schedule interval: how far a pass moves its clock when nothing is due. */
const INTERVAL_MS = 1000;
/** Goals are spread over this many tenants (each tenant's host event stream serializes its appends). */
const TENANTS = Number(process.env.BENCH_GOAL_TENANTS ?? 20);

const noopWorker: GoalWorkerProvider = {
  pollIntervalMs: 1000,
  start: async () => ({ runId: randomUUID() }),
  collect: async (_g, runId) => ({ runId, status: 'completed', output: {}, costUsd: 0 }),
};


async function boot(url: string, instance: string): Promise<Host> {
  const host = await bootQuietHost(url, instance);
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
              jsonb_build_object('intervalMs', $5::int), 'noop', '{"maxLoopIterations": 1000000, "runTimeoutMs": 604800000, "maxCostUsd": 100}'::jsonb, $2, $1, $1, $1
       FROM (SELECT gen_random_uuid() AS id, i FROM generate_series(1, $3) AS i) s`,
      [now, deadline, n, TENANTS, INTERVAL_MS],
    );
  }
  // Planner statistics, as autovacuum keeps them on a live table: without them the due-goal claim is
  // planned for a handful of rows and sorts every due goal on each claim (host and raw loop alike).
  await pool.query('ANALYZE "goal"');
}

/**
 * A pass's own goal clock. With the clock frozen, a goal is worked once and then waits for its next
 * due time; when nothing is due the pass moves its clock one schedule interval on, so every goal is
 * due again and the pass keeps working for as long as the phase lasts (rounds of `count` iterations).
 */
class PassClock {
  constructor(public now: Date) {}
  advance(): void {
    this.now = new Date(this.now.getTime() + INTERVAL_MS);
  }
}

/** Iterations a pass has recorded so far; read by the phase at the start and end of its window. */
interface Counter {
  n: number;
}

interface PhaseResult {
  label: string;
  iterations: number;
  seconds: number;
  rate: number;
  cpu: CpuReading | undefined;
}

/**
 * Runs the passes together: warmMs first (connections opened, code compiled, caches filled; not
 * counted), then a window of limitMs in which iterations are counted and CPU use is measured.
 */
async function phase(label: string, warmMs: number, limitMs: number, passes: Array<(stopAt: () => boolean, counter: Counter) => Promise<void>>): Promise<PhaseResult> {
  process.stderr.write(`${label}...\n`);
  let stop = false;
  const counters = passes.map(() => ({ n: 0 }));
  const running = Promise.all(passes.map((p, i) => p(() => stop, counters[i])));
  const sum = () => counters.reduce((a, c) => a + c.n, 0);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const failed = running.then(() => {
    if (!stop) throw new Error(`${label}: a pass ended before the phase did`);
  });
  await Promise.race([sleep(warmMs), failed]);
  const before = sum();
  const start = process.hrtime.bigint();
  const meter = cpuMeter();
  await Promise.race([sleep(limitMs), failed]);
  const cpu = meter.stop();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const iterations = sum() - before;
  stop = true;
  await running;
  return { label, iterations, seconds, rate: iterations / seconds, cpu };
}

/** The host scheduler, batch after batch, until the phase ends. */
function hostPass(host: Host, clock: PassClock) {
  const scheduler = host.app.get(GoalSchedulerService);
  host.app.get(GoalClock).useSource(() => clock.now);
  return async (stopped: () => boolean, counter: Counter) => {
    while (!stopped()) {
      const r = await scheduler.runOnce({ now: clock.now, maxGoals: BATCH * 5 });
      counter.n += r.recorded;
      if (!r.claimed) clock.advance();
    }
  };
}

/** Baseline: the same claim, then one UPDATE per goal counting the iteration and re-arming it. */
function rawPass(pool: Pool, clock: PassClock, owner: string, concurrency: number) {
  return async (stopped: () => boolean, counter: Counter) => {
    while (!stopped()) {
      const now = clock.now;
      const next = new Date(now.getTime() + INTERVAL_MS);
      const claimed = await pool.query(
        `WITH due AS (SELECT "id" FROM "goal" WHERE "state" = 'active' AND "next_due_at" <= $1 AND ("lease_expires_at" IS NULL OR "lease_expires_at" <= $1)
           ORDER BY "next_due_at" LIMIT $2 FOR UPDATE SKIP LOCKED)
         UPDATE "goal" SET "lease_owner" = $3, "lease_expires_at" = $4 FROM due WHERE "goal"."id" = due."id" RETURNING "goal"."id"`,
        [now, BATCH, owner, new Date(now.getTime() + 60_000)],
      );
      if (!claimed.rowCount) {
        clock.advance();
        continue;
      }
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
            counter.n++;
          }
        }),
      );
    }
  };
}

/** The second instance, in its own process: works goals from the clock it is given (an ISO instant) on each `go`. */
async function child(url: string): Promise<void> {
  const host = await boot(url, 'bench-b');
  serveReplica((stopped, counter, nowIso) => hostPass(host, new PassClock(new Date(nowIso)))(stopped, counter), () => host.close());
}

/** Several windows of one configuration as one figure: all their iterations over all their seconds. */
function combined(label: string, results: PhaseResult[]): PhaseResult {
  const iterations = results.reduce((a, r) => a + r.iterations, 0);
  const seconds = results.reduce((a, r) => a + r.seconds, 0);
  const cpus = results.map((r) => r.cpu).filter((c): c is CpuReading => c !== undefined);
  const cpu = cpus.length === results.length
    ? { cores: cpus[0].cores, busyCores: cpus.reduce((a, c, i) => a + c.busyCores * results[i].seconds, 0) / seconds, postgresCores: cpus.reduce((a, c, i) => a + c.postgresCores * results[i].seconds, 0) / seconds }
    : undefined;
  return { label, iterations, seconds, rate: iterations / seconds, cpu };
}

export async function main(count = Number(process.argv[2] ?? 10_000), secondsPerPhase = Number(process.argv[3] ?? 10)): Promise<void> {
  const bench = await createBenchDatabase('bench_goals');
  const url = bench.url;
  const hosts: Host[] = [];
  const pool = new Pool({ connectionString: url.toString(), max: 10 });
  try {
    const a = await boot(url.toString(), 'bench-a');
    hosts.push(a);
    const now = new Date('2026-06-13T00:00:00.000Z');
    const limit = secondsPerPhase * 1000;
    const warm = Math.max(2000, limit / 4);
    const concurrency = a.config.file.goals && typeof (a.config.file.goals as { concurrency?: unknown }).concurrency === 'number' ? Number((a.config.file.goals as { concurrency: number }).concurrency) : 8;

    await seed(pool, count, now);
    const raw1 = await phase('raw SQL claim loop, 1 worker', warm, limit, [rawPass(pool, new PassClock(now), 'raw-a', concurrency)]);
    await seed(pool, count, now);
    const raw2 = await phase('raw SQL claim loop, 2 workers', warm, limit, [rawPass(pool, new PassClock(now), 'raw-a', concurrency), rawPass(pool, new PassClock(now), 'raw-b', concurrency)]);

    // One and two instances alternate, twice each, so a slow spell of the machine does not land on one side only.
    const b = await forkReplica(__filename, ['--child', url.toString()]);
    const ones: PhaseResult[] = [];
    const twos: PhaseResult[] = [];
    for (let round = 1; round <= 2; round++) {
      await seed(pool, count, now);
      ones.push(await phase(`host scheduler, 1 instance (${round})`, warm, limit, [hostPass(a, new PassClock(now))]));
      await seed(pool, count, now);
      twos.push(await phase(`host scheduler, 2 instances (${round})`, warm, limit, [hostPass(a, new PassClock(now)), b.pass(now.toISOString())]));
    }
    await b.close();
    const one = combined('host scheduler, 1 instance', ones);
    const two = combined('host scheduler, 2 instances', twos);

    const dupes = await pool.query(`SELECT count(*)::int AS n FROM (SELECT "payload"->>'runId' FROM "event" WHERE "type" = 'goal.evaluated' GROUP BY 1 HAVING count(*) > 1) d`);
    process.stdout.write(`\nGoal scheduler benchmark: ${count} active goals, no-op worker, instant host judge, ${(warm / 1000).toFixed(1)} s warm-up + ${secondsPerPhase} s counted per phase\n\n`);
    process.stdout.write(`${'phase'.padEnd(34)}${'iterations'.padStart(12)}${'seconds'.padStart(10)}${'iter/s'.padStart(10)}   CPU\n`);
    for (const r of [raw1, raw2, ...ones, ...twos, one, two]) {
      process.stdout.write(`${r.label.padEnd(34)}${String(r.iterations).padStart(12)}${r.seconds.toFixed(2).padStart(10)}${r.rate.toFixed(0).padStart(10)}   ${formatCpu(r.cpu)}\n`);
    }
    process.stdout.write(`\nhost/raw, 1 instance:  ${(one.rate / raw1.rate).toFixed(3)}\n`);
    process.stdout.write(`host/raw, 2 instances: ${(two.rate / raw2.rate).toFixed(3)}\n`);
    process.stdout.write(`2 instances / 1 instance (host): ${(two.rate / one.rate).toFixed(2)} (target >= 1.6); raw loop, 2 workers / 1: ${(raw2.rate / raw1.rate).toFixed(2)}\n`);
    if (one.cpu) {
      // A second replica can only use what one instance leaves idle.
      process.stdout.write(`one instance kept ${one.cpu.busyCores.toFixed(2)} of ${one.cpu.cores} cores busy: the most a second replica on this machine could add is ${(one.cpu.cores / one.cpu.busyCores).toFixed(2)}x\n`);
    }
    process.stdout.write(`runs judged twice: ${dupes.rows[0].n}\n`);
  } finally {
    await pool.end();
    for (const h of hosts.reverse()) await h.close().catch(() => undefined);
    await bench.drop();
  }
}

runBenchmark(module, () => main(), (args) => child(args[0]));
