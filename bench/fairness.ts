/**
 * Fair scheduling benchmark (issue 39 item 5; docs/operations.md §Fair scheduling): how long another
 * tenant's single run takes to start (and finish: a one-node `core.noop` run finishes in the write
 * that starts it) while one tenant holds a backlog of queued runs, against the same run on the idle
 * host, measured in the same round. Goal: backlog / idle <= 2.
 *
 *   npm run bench -- fairness [backlog] [rounds] [samples]
 *
 * One host (the engine claiming on its own, as in production: notifications and its periodic claim)
 * on a scratch database of DATABASE_URL's server (default postgres://postgres@127.0.0.1:5432). Each
 * round: `samples` (default 5) runs of tenant `quiet` on the idle host, one after the other; then
 * `backlog` (default 10,000) runs of tenant `flood` are queued at once (one statement, as many
 * clients would, announced on the runs channel), and once the engine works them off, `samples` more
 * runs of `quiet`, one after the other. A run's latency is its finish minus its creation, both on the
 * database clock (the run row's `completed_at` and `created_at`). What is left of the backlog is
 * deleted before the next round. Prints each round's medians and their ratio, then min/median/max of
 * the ratios over `rounds` (default 3), and the load average it ran under. OPENWOP_TENANT_MAX_ACTIVE_RUNS
 * from the environment is passed to the host. Each round also prints where the quiet runs' time went
 * (wake-up, claim, execution, waiting for the write, the write; see Phases) and how many writes of
 * the other tenant's runs were answered while each was in flight (an upper bound of the statements
 * it waited on: the backlog's writes go on beside it, so 1 or 2 is usual on a loaded machine). A
 * measurement, not a test.
 */
import 'reflect-metadata';
import * as os from 'node:os';
import { Pool } from 'pg';
import { RUNS_CHANNEL } from '../src/platform/database/database-notifications';
import { benchPool, runBenchmark, startBenchHost } from './harness';
import { RunEngineService } from '../src/capabilities/runs/engine/run-engine.service';
import { RunExecution } from '../src/capabilities/runs/engine/run-execution';
import { FlushBatcher } from '../src/capabilities/runs/engine/run-flush-batcher';
import { RunClaimer } from '../src/capabilities/runs/engine/run-claimer';
import type { ClaimedRow, FlushParams } from '../src/capabilities/runs/engine/run-store';

const CHAIN = { nodes: [{ id: 'only', typeId: 'core.noop', config: {} }], edges: [] };

/** Milliseconds on the wall clock, with fractions (Date.now's epoch). */
const now = () => performance.timeOrigin + performance.now();

/**
 * Where a quiet run's time goes, on this process's clock: created (its insert sent) -> woken (the
 * engine's first wake-up after it) -> claim sent -> claimed (its execution starts) -> node started ->
 * write queued (its last write handed to the batcher) -> write sent (in a statement of `batch` runs)
 * -> written. `folded`: claimed by a write's folded claim, not by a claim pass.
 */
interface Phases { created: number; woken?: number; claimSent?: number; claimed?: number; folded?: boolean; node?: number; queued?: number; sent?: number; batch?: number; written?: number; writesAtCreation: number; writesWaited?: number }
/** The engine's writes of other runs answered so far (those answered while a quiet run is in flight bound what it can have waited on). */
let otherWrites = 0;
/** The quiet tenant's run being timed (its runs go one at a time). */
let current: Phases | undefined;
const TRACED_TENANT = 'quiet';
const tracedOf = (tenant: string) => (tenant === TRACED_TENANT ? current : undefined);
let lastWake = 0;
let inGive = false;

/** Wraps the engine's steps (this process runs the host) to time the traced runs' phases. */
function instrument(): void {
  const P = <T>(c: { prototype: T }) => c.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const wrap = (proto: Record<string, (...a: unknown[]) => unknown>, name: string, around: (orig: (...a: unknown[]) => unknown, self: unknown, args: unknown[]) => unknown) => {
    const orig = proto[name];
    proto[name] = function (this: unknown, ...args: unknown[]) {
      return around(orig, this, args);
    };
  };
  wrap(P(RunClaimer), 'noteClaimable', (orig, self, args) => ((lastWake = now()), orig.apply(self, args)));
  wrap(P(RunClaimer), 'give', (orig, self, args) => {
    inGive = true;
    try {
      return orig.apply(self, args);
    } finally {
      inGive = false;
    }
  });
  wrap(P(RunEngineService), 'start', (orig, self, args) => {
    const t = tracedOf((args[0] as ClaimedRow).tenant);
    if (t && t.claimed === undefined) Object.assign(t, { claimSent: args[1] as number, claimed: now(), folded: inGive, woken: lastWake >= t.created ? lastWake : undefined });
    return orig.apply(self, args);
  });
  wrap(P(RunExecution), 'launch', (orig, self, args) => {
    const t = tracedOf((self as { row: ClaimedRow }).row.tenant);
    if (t && t.node === undefined) t.node = now();
    return orig.apply(self, args);
  });
  wrap(P(FlushBatcher), 'flush', (orig, self, args) => {
    const f = args[0] as FlushParams;
    const t = tracedOf(f.tenant);
    if (t && f.update.terminal) t.queued = now();
    return orig.apply(self, args);
  });
  wrap(P(FlushBatcher), 'write', (orig, self, args) => {
    const batch = args[0] as Array<{ f: FlushParams }>;
    const mine = batch.map((w) => (w.f.update.terminal ? tracedOf(w.f.tenant) : undefined)).filter((t): t is Phases => !!t);
    for (const t of mine) Object.assign(t, { sent: now(), batch: batch.length });
    return (orig.apply(self, args) as Promise<void>).finally(() => {
      if (!mine.length) otherWrites++;
      for (const t of mine) Object.assign(t, { written: now(), writesWaited: otherWrites - t.writesAtCreation });
    });
  });
}

const PHASES: Array<[string, (t: Phases) => number | undefined]> = [
  ['create->claim sent', (t) => (t.claimSent === undefined ? undefined : t.claimSent - t.created)],
  ['create->woken', (t) => (t.woken === undefined ? undefined : t.woken - t.created)],
  ['claim', (t) => (t.claimed === undefined || t.claimSent === undefined ? undefined : t.claimed - t.claimSent)],
  ['claimed->write queued', (t) => (t.queued === undefined || t.claimed === undefined ? undefined : t.queued - t.claimed)],
  ['queued->sent', (t) => (t.sent === undefined || t.queued === undefined ? undefined : t.sent - t.queued)],
  ['write', (t) => (t.written === undefined || t.sent === undefined ? undefined : t.written - t.sent)],
];

/** The median of each phase over the traced runs, one line. */
function phases(ts: Phases[]): string {
  const parts = PHASES.map(([label, f]) => {
    const xs = ts.map(f).filter((x): x is number => x !== undefined);
    return `${label} ${xs.length ? median(xs).toFixed(1) : '-'}`;
  });
  const folded = ts.filter((t) => t.folded).length;
  const batch = ts.map((t) => t.batch ?? 0);
  const waited = ts.map((t) => t.writesWaited ?? 0);
  return `${parts.join(', ')} ms; claimed by a write ${folded}/${ts.length}, write batch p50 ${median(batch)}, other runs' writes answered meanwhile p50 ${median(waited)} (max ${Math.max(...waited)})`;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function queue(pool: Pool, tenant: string, count: number): Promise<string[]> {
  const r = await pool.query(
    `WITH ins AS (
       INSERT INTO "run" ("tenant", "principal", "kind", "status", "metadata", "workflow_id", "definition", "inputs", "configurable", "scopes")
       SELECT $1, 'bench', 'workflow', 'pending', '{}'::jsonb, 'bench.fair', $2::jsonb, '{}'::jsonb, '{}'::jsonb, '{}'::text[]
       FROM generate_series(1, $3::int) RETURNING "id"
     ), n AS (SELECT pg_notify('${RUNS_CHANNEL}', '') WHERE EXISTS (SELECT 1 FROM ins))
     SELECT "id" FROM ins, (SELECT count(*) FROM n) k`,
    [tenant, JSON.stringify(CHAIN), count],
  );
  return r.rows.map((x: { id: string }) => x.id);
}

/** Queues one run of `tenant` and answers its latency (finish - creation, database clock, ms) once finished. */
async function oneRun(pool: Pool, tenant: string, timeoutMs = 600_000, trace?: Phases[]): Promise<number> {
  current = trace && tenant === TRACED_TENANT ? { created: now(), writesAtCreation: otherWrites } : undefined;
  if (current) trace!.push(current);
  const [id] = await queue(pool, tenant, 1);
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await pool.query(`SELECT "status", extract(epoch FROM ("completed_at" - "created_at")) * 1000 AS ms FROM "run" WHERE "id" = $1`, [id]);
    const row = r.rows[0] as { status: string; ms: number | null };
    if (row.status === 'completed' && row.ms !== null) return Number(row.ms);
    if (['failed', 'cancelled'].includes(row.status)) throw new Error(`run ${id} ended ${row.status}`);
    if (Date.now() > until) throw new Error(`run ${id} did not finish within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function count(pool: Pool, where: string, params: unknown[]): Promise<number> {
  return (await pool.query(`SELECT count(*)::int AS n FROM "run" WHERE ${where}`, params)).rows[0].n as number;
}

export async function main(backlog = Number(process.argv[2] ?? 10_000), rounds = Number(process.argv[3] ?? 3), samples = Number(process.argv[4] ?? 5)): Promise<void> {
  const cap = process.env.OPENWOP_TENANT_MAX_ACTIVE_RUNS;
  const bench = await startBenchHost({ OPENWOP_SCHEDULER_ENABLED: 'true', OPENWOP_FAIR_CLAIMS: 'true', ...(cap ? { OPENWOP_TENANT_MAX_ACTIVE_RUNS: cap } : {}) });
  const pool = benchPool(bench.databaseUrl, 3);
  instrument();
  const load = os.loadavg()[0];
  const results: Array<{ idle: number; busy: number; left: number; waited: number; committed: number }> = [];
  // Creation (insert sent) to its last write answered, on this process's clock: the finish a client sees (committed), which
  // the database clock's completed_at (the write's transaction start) does not include.
  const toWritten = (ts: Phases[]) => median(ts.map((t) => (t.written ?? NaN) - t.created));
  try {
    // Warm-up: the statements prepared, the engine's first claims made.
    for (let i = 0; i < 3; i++) await oneRun(pool, 'quiet');
    for (let round = 1; round <= rounds; round++) {
      const idle: number[] = [];
      const idleTrace: Phases[] = [];
      for (let i = 0; i < samples; i++) idle.push(await oneRun(pool, 'quiet', undefined, idleTrace));
      await queue(pool, 'flood', backlog);
      // The backlog is being worked off when the quiet tenant's runs arrive.
      while ((await count(pool, `"tenant" = 'flood' AND "status" = 'completed'`, [])) === 0) await new Promise((r) => setTimeout(r, 5));
      const busy: number[] = [];
      const busyTrace: Phases[] = [];
      for (let i = 0; i < samples; i++) busy.push(await oneRun(pool, 'quiet', undefined, busyTrace));
      const left = await count(pool, `"tenant" = 'flood' AND "status" = 'pending'`, []);
      results.push({ idle: median(idle), busy: median(busy), left, waited: median(busyTrace.map((t) => t.writesWaited ?? 0)), committed: toWritten(busyTrace) / toWritten(idleTrace) });
      process.stdout.write(`round ${round}: idle p50 ${median(idle).toFixed(1)} ms, behind the backlog p50 ${median(busy).toFixed(1)} ms (max ${Math.max(...busy).toFixed(1)}), ratio ${(median(busy) / median(idle)).toFixed(2)}x; ${left} of ${backlog} still queued after\n`);
      process.stdout.write(`  idle:   ${phases(idleTrace)}\n  behind: ${phases(busyTrace)}\n`);
      process.stdout.write(`  until its write is answered (committed): idle p50 ${toWritten(idleTrace).toFixed(1)} ms, behind the backlog ${toWritten(busyTrace).toFixed(1)} ms, ratio ${(toWritten(busyTrace) / toWritten(idleTrace)).toFixed(2)}x\n`);
      // Reset: drop what is still queued, let what is executing finish.
      // The engine locks the same rows meanwhile (claims, writes): a deadlock is retried.
      for (let attempt = 0; ; attempt++) {
        try {
          await pool.query(`DELETE FROM "run" WHERE "tenant" = 'flood' AND "status" = 'pending' AND ("lease_owner" IS NULL OR "lease_expires_at" < now())`);
          break;
        } catch (e) {
          if ((e as { code?: string }).code !== '40P01' || attempt >= 10) throw e;
        }
      }
      while ((await count(pool, `"tenant" = 'flood' AND "status" IN ('pending', 'running')`, [])) > 0) await new Promise((r) => setTimeout(r, 20));
      if (!left) process.stdout.write(`  (the backlog was gone before the last sample: raise the backlog for a meaningful figure)\n`);
    }
    const ratios = results.map((r) => r.busy / r.idle).sort((a, b) => a - b);
    const waited = results.map((r) => r.waited).sort((a, b) => a - b);
    const committed = results.map((r) => r.committed).sort((a, b) => a - b);
    process.stdout.write(
      `\nFair scheduling: another tenant's single run behind a ${backlog}-run backlog / idle, ${rounds} round(s) of ${samples} samples` +
        `${cap ? `, OPENWOP_TENANT_MAX_ACTIVE_RUNS=${cap}` : ''}, load average ${load.toFixed(2)} at the start, ${os.loadavg()[0].toFixed(2)} at the end:\n` +
        `ratio min ${ratios[0].toFixed(2)}x, median ${median(ratios).toFixed(2)}x, max ${ratios[ratios.length - 1].toFixed(2)}x (target <= 2: ${median(ratios) <= 2 ? 'met' : 'NOT met'})\n` +
        `until committed (its write answered, this process's clock): ratio min ${committed[0].toFixed(2)}x, median ${median(committed).toFixed(2)}x, max ${committed[committed.length - 1].toFixed(2)}x\n` +
        `other runs' writes answered while a quiet run was in flight, per round p50: min ${waited[0]}, median ${median(waited)}, max ${waited[waited.length - 1]}\n`,
    );
  } finally {
    await pool.end();
    await bench.close();
  }
}

runBenchmark(module, () => main());
