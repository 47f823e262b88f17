/**
 * Run engine benchmark: runs per second of a 10-node `core.noop` chain on one host instance and on two
 * instances sharing the database (the second in its own process, as a replica would be), against a
 * baseline measured in the same run: a raw SQL step-claim loop that writes the same rows (the run
 * claim, one transaction per step that checks the run's lease, claims the step and writes its
 * node row and its node.started/node.completed events, then the run's completion). Prints rates and
 * ratios; a measurement, not a test.
 *
 *   npm run bench -- runs [backlog] [workers] [secondsPerPhase]
 *
 * Uses DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) to create and drop a
 * scratch database. A feeder keeps about `backlog` (default 2000) runs pending, as POST /v1/runs
 * would; each phase warms up (a quarter of its length, at least 2 s, not counted), then counts the
 * runs completed in secondsPerPhase (default 10) while measuring how busy the machine's cores are.
 * `workers` (default 48) is both the raw loop's concurrency and the host's `runs.maxActiveRuns`.
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import type { Host } from '../src/bootstrap';
import { RunEngineService } from '../src/capabilities/runs/engine/run-engine.service';
import { bootQuietHost, cpuMeter, CpuReading, createBenchDatabase, forkReplica, formatCpu, insertPendingRuns, runBenchmark, serveReplica } from './harness';

const NODES = 10;
const TENANTS = 20;

function definition(): Record<string, unknown> {
  const nodes = Array.from({ length: NODES }, (_, i) => ({ id: `n${i + 1}`, typeId: 'core.noop', config: { step: i + 1 } }));
  return { workflowId: 'bench.chain', nodes, edges: nodes.slice(1).map((n, i) => ({ from: nodes[i].id, to: n.id })) };
}


function boot(url: string, instance: string, workers: number): Promise<Host> {
  // The engine is driven by the benchmark (claimAvailable), not by the periodic ticker.
  return bootQuietHost(url, instance, { runs: { maxActiveRuns: workers, leaseMs: 30_000 } });
}

/** `count` more pending workflow runs of the chain, as POST /v1/runs writes them. */
function addRuns(pool: Pool, count: number, kind: string): Promise<void> {
  return insertPendingRuns(pool, count, { definition: definition() as { workflowId: string }, kind, tenants: TENANTS });
}

async function countRuns(pool: Pool, kind: string, status: string): Promise<number> {
  const r = await pool.query(`SELECT count(*)::int AS n FROM "run" WHERE "kind" = $1 AND "status" = $2`, [kind, status]);
  return r.rows[0].n;
}

interface PhaseResult {
  label: string;
  runs: number;
  seconds: number;
  rate: number;
  cpu: CpuReading | undefined;
}

/**
 * Starts from an empty run table with `backlog` pending runs and keeps about that many pending while
 * the drivers work: warmMs first (not counted), then the runs completed in limitMs are counted and
 * the machine's CPU use is measured. Then the drivers stop, drain what they hold, and every run must
 * have completed (none failed, none left in flight).
 */
async function phase(
  label: string,
  pool: Pool,
  kind: string,
  backlog: number,
  warmMs: number,
  limitMs: number,
  drivers: Array<(stopped: () => boolean) => Promise<void>>,
): Promise<PhaseResult> {
  process.stderr.write(`${label}...\n`);
  await pool.query(`TRUNCATE "run", "run_node", "event", "event_stream"`);
  await addRuns(pool, backlog, kind);
  let stop = false;
  const stopped = () => stop;
  const feeder = (async () => {
    while (!stop) {
      if ((await countRuns(pool, kind, 'pending')) < backlog / 2) await addRuns(pool, Math.ceil(backlog / 2), kind);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const running = Promise.all(drivers.map((d) => d(stopped)));
  const failed = running.then(() => {
    if (!stop) throw new Error(`${label}: a driver ended before the phase did`);
  });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  await Promise.race([sleep(warmMs), failed]);
  const before = await countRuns(pool, kind, 'completed');
  const start = process.hrtime.bigint();
  const meter = cpuMeter();
  await Promise.race([sleep(limitMs), failed]);
  const cpu = meter.stop();
  const after = await countRuns(pool, kind, 'completed');
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  stop = true;
  await Promise.all([running, feeder]);
  const bad = (await pool.query(`SELECT count(*)::int AS n FROM "run" WHERE "kind" = $1 AND "status" NOT IN ('pending', 'completed')`, [kind])).rows[0].n;
  if (bad) throw new Error(`${label}: ${bad} runs neither pending nor completed after the drivers stopped`);
  return { label, runs: after - before, seconds, rate: (after - before) / seconds, cpu };
}

/** The engine of one instance, asked for work every few milliseconds until stopped; then it finishes what it holds. */
async function driveEngine(host: Host, stopped: () => boolean): Promise<void> {
  const engine = host.app.get(RunEngineService);
  while (!stopped()) {
    await engine.claimAvailable();
    await new Promise((r) => setTimeout(r, 2));
  }
  while (engine.activeCount() > 0) await new Promise((r) => setTimeout(r, 5));
}

/** Baseline: claim a run, then one transaction per step, the writes the engine does without batching. */
async function rawLoop(pool: Pool, workers: number, owner: string, stopped: () => boolean): Promise<void> {
  const def = definition() as { nodes: Array<{ id: string; typeId: string; config: Record<string, unknown> }> };
  const events = async (c: import('pg').PoolClient, tenant: string, runId: string, items: Array<{ type: string; nodeId?: string; payload: unknown }>) => {
    const seq = await c.query(
      `INSERT INTO "event_stream" ("tenant", "stream_id", "last_sequence") VALUES ($1, $2, $3)
       ON CONFLICT ("tenant", "stream_id") DO UPDATE SET "last_sequence" = "event_stream"."last_sequence" + $3 RETURNING "last_sequence", "key"`,
      [tenant, runId, items.length],
    );
    const first = Number(seq.rows[0].last_sequence) - items.length + 1;
    for (let i = 0; i < items.length; i++) {
      await c.query(`INSERT INTO "event" ("id", "tenant", "stream_key", "sequence", "type", "payload", "node_id") VALUES ($1, $2, $3, $4, $5, $6::json, $7)`, [
        randomUUID(), tenant, seq.rows[0].key, first + i, items[i].type, JSON.stringify(items[i].payload), items[i].nodeId ?? null,
      ]);
    }
  };
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (!stopped()) {
        const claimed = await pool.query(
          `WITH c AS (SELECT "id" FROM "run" WHERE "kind" = 'bench-raw' AND "status" = 'pending' AND "lease_owner" IS NULL ORDER BY "created_at" LIMIT 1 FOR UPDATE SKIP LOCKED)
           UPDATE "run" r SET "lease_owner" = $1, "lease_expires_at" = now() + interval '30 seconds', "fence" = r."fence" + 1 FROM c WHERE r."id" = c."id" RETURNING r."id", r."tenant", r."fence"`,
          [owner],
        );
        if (!claimed.rowCount) {
          await new Promise((r) => setTimeout(r, 2));
          continue;
        }
        const { id, tenant, fence } = claimed.rows[0] as { id: string; tenant: string; fence: number };
        for (let i = 0; i < def.nodes.length; i++) {
          const n = def.nodes[i];
          const c = await pool.connect();
          try {
            await c.query('BEGIN');
            const ok = await c.query(`UPDATE "run" SET "lease_expires_at" = now() + interval '30 seconds', "status" = 'running', "node_executions" = $4 WHERE "id" = $1 AND "lease_owner" = $2 AND "fence" = $3`, [id, owner, fence, i + 1]);
            if (ok.rowCount !== 1) throw new Error('lease lost');
            await c.query(
              `INSERT INTO "run_node" ("run_id", "node_id", "status", "attempt", "outputs") VALUES ($1, $2, 'completed', 0, $3::jsonb)
               ON CONFLICT ("run_id", "node_id") DO UPDATE SET "status" = 'completed', "outputs" = EXCLUDED."outputs" WHERE "run_node"."status" <> 'completed'`,
              [id, n.id, JSON.stringify(n.config)],
            );
            const items: Array<{ type: string; nodeId?: string; payload: unknown }> = [];
            if (i === 0) items.push({ type: 'run.started', payload: { workflowId: 'bench.chain' } });
            items.push({ type: 'node.started', nodeId: n.id, payload: { nodeId: n.id, typeId: n.typeId } }, { type: 'node.completed', nodeId: n.id, payload: { nodeId: n.id, outputs: n.config } });
            if (i === def.nodes.length - 1) items.push({ type: 'run.completed', payload: { outputs: { [n.id]: n.config } } });
            await events(c, tenant, id, items);
            if (i === def.nodes.length - 1) {
              await c.query(`UPDATE "run" SET "status" = 'completed', "outputs" = $2::jsonb, "completed_at" = now(), "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "id" = $1`, [id, JSON.stringify({ [n.id]: n.config })]);
            }
            await c.query('COMMIT');
          } catch (e) {
            await c.query('ROLLBACK');
            throw e;
          } finally {
            c.release();
          }
        }
      }
    }),
  );
}

/** The second instance, in its own process: works runs on each `go` until told to stop. */
async function child(url: string, workers: number): Promise<void> {
  const host = await boot(url, 'bench-b', workers);
  serveReplica((stopped) => driveEngine(host, stopped), () => host.close());
}

export async function main(backlog = Number(process.argv[2] ?? 2000), workers = Number(process.argv[3] ?? 48), secondsPerPhase = Number(process.argv[4] ?? 10)): Promise<void> {
  const bench = await createBenchDatabase('bench_runs');
  const url = bench.url;
  const hosts: Host[] = [];
  const pool = new Pool({ connectionString: url.toString(), max: 10 });
  const limit = secondsPerPhase * 1000;
  const warm = Math.max(2000, limit / 4);
  try {
    process.stderr.write('booting the host\n');
    const a = await boot(url.toString(), 'bench-a', workers);
    hosts.push(a);
    const raw = await phase('raw SQL step-claim loop', pool, 'bench-raw', backlog, warm, limit, [(stopped) => rawLoop(pool, workers, 'raw', stopped)]);
    // The same loop twice, on its own connections: whether this machine has room for a second worker at all.
    const rawPool = new Pool({ connectionString: url.toString(), max: 10 });
    const raw2 = await phase('raw SQL step-claim loop, 2 workers', pool, 'bench-raw', backlog, warm, limit, [
      (stopped) => rawLoop(pool, workers, 'raw-a', stopped),
      (stopped) => rawLoop(rawPool, workers, 'raw-b', stopped),
    ]).finally(() => rawPool.end());
    const one = await phase('run engine, 1 instance', pool, 'workflow', backlog, warm, limit, [(stopped) => driveEngine(a, stopped)]);
    const b = await forkReplica(__filename, ['--child', url.toString(), String(workers)]);
    const two = await phase('run engine, 2 instances', pool, 'workflow', backlog, warm, limit, [(stopped) => driveEngine(a, stopped), (stopped) => b.pass()(stopped, { n: 0 })]);
    await b.close();
    const dupes = await pool.query(`SELECT count(*)::int AS n FROM (SELECT 1 FROM "event" WHERE "event_type_name"("code", "type") = 'node.completed' GROUP BY "stream_key", "node_id" HAVING count(*) > 1) d`);
    const perRun = await pool.query(`SELECT (SELECT count(*) FROM "event")::float8 / NULLIF((SELECT count(*) FROM "run" WHERE "status" = 'completed'), 0) AS n`);

    process.stdout.write(`\nRun engine benchmark: a ${NODES}-node core.noop chain, about ${backlog} runs kept pending, ${workers} runs in flight per instance, ${(warm / 1000).toFixed(1)} s warm-up + ${secondsPerPhase} s counted per phase\n\n`);
    process.stdout.write(`${'phase'.padEnd(36)}${'runs'.padStart(8)}${'seconds'.padStart(10)}${'runs/s'.padStart(10)}   CPU\n`);
    for (const r of [raw, raw2, one, two]) process.stdout.write(`${r.label.padEnd(36)}${String(r.runs).padStart(8)}${r.seconds.toFixed(2).padStart(10)}${r.rate.toFixed(0).padStart(10)}   ${formatCpu(r.cpu)}\n`);
    process.stdout.write(`\nengine/raw, 1 instance: ${(one.rate / raw.rate).toFixed(2)}x (target >= 0.5; and >= 200 runs/s: ${one.rate >= 200 ? 'met' : 'NOT met'})\n`);
    process.stdout.write(`2 instances / 1 instance: ${(two.rate / one.rate).toFixed(2)}x (target >= 1.6); raw loop, 2 workers / 1: ${(raw2.rate / raw.rate).toFixed(2)}x\n`);
    if (one.cpu) {
      // A second replica can only use what one instance leaves idle.
      process.stdout.write(`one instance kept ${one.cpu.busyCores.toFixed(2)} of ${one.cpu.cores} cores busy: the most a second replica on this machine could add is ${(one.cpu.cores / one.cpu.busyCores).toFixed(2)}x\n`);
    }
    process.stdout.write(`events per completed run in the last phase: ${Number(perRun.rows[0].n ?? 0).toFixed(1)}; nodes completed twice: ${dupes.rows[0].n}\n`);
  } finally {
    await pool.end();
    for (const h of hosts.reverse()) await h.close().catch(() => undefined);
    await bench.drop();
  }
}

runBenchmark(module, () => main(), (args) => child(args[0], Number(args[1])));
