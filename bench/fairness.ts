/**
 * Fair scheduling benchmark (issue 39 item 5; docs/operations.md §Fair scheduling): how long another
 * tenant's single run takes to start while one tenant holds a backlog of queued runs, against the
 * same run on the idle host, measured in the same round. Goal: backlog / idle <= 2.
 *
 *   npm run bench -- fairness [backlog] [rounds] [samples] [--sql] [--hold=<ms>]
 *
 * One host (the engine claiming on its own, as in production: notifications and its periodic claim)
 * on a scratch database of DATABASE_URL's server (default postgres://postgres@127.0.0.1:5432). Each
 * round: `samples` (default 5) runs of tenant `quiet` on the idle host, one after the other; then
 * `backlog` (default 10,000) runs of tenant `flood` are queued at once (one statement, as many
 * clients would, announced on the runs channel), and once the engine works them off, `samples` more
 * runs of `quiet`, one after the other. What is left of the backlog is deleted before the next round.
 * The backlog's runs are one-node `core.noop` runs (the engine busy writing them, its slots freeing
 * all the time); with `--hold=<ms>` one-node `core.delay` runs that hold their slots that long (every
 * slot taken, the machine mostly idle).
 *
 * The quiet tenant submits as a user does: `POST /v1/runs` over HTTP (keep-alive), a one-node
 * `core.noop` chain installed for it, so on both sides its run goes the way a user's goes (started
 * by its own insert when the replica has a slot for it). A run's latency is, on this process's clock
 * (it runs the host), from the request sent until the run's start is committed: its first write
 * answered, which for this run is the write that starts and finishes it (an eagerly started run's
 * insert). The ratio of the medians, behind the backlog / idle, is the figure; the round also prints
 * the same ratio until its node started executing and until the response arrived. With `--sql` the
 * quiet runs are inserted by SQL and announced on the runs channel instead, the notification naming
 * the run (the way another replica's unclaimed run arrives), and their latency is finish minus creation on the database clock (the run
 * row's `completed_at` and `created_at`), as this benchmark measured before it used the API.
 *
 * Prints each round's medians and their ratio, then min/median/max of the ratios over `rounds`
 * (default 3), and the load average it ran under. OPENWOP_TENANT_MAX_ACTIVE_RUNS and
 * OPENWOP_FAIR_CLAIMS (default true) from the environment are passed to the host. Each round also
 * prints where the quiet runs' time went (wake-up, claim, execution, waiting for the write, the
 * write; see Phases) and how many writes of the other tenant's runs were answered while each was in
 * flight (an upper bound of the statements it waited on: the backlog's writes go on beside it, so 1
 * or 2 is usual on a loaded machine). A measurement, not a test.
 */
import 'reflect-metadata';
import * as http from 'node:http';
import * as os from 'node:os';
import { Pool } from 'pg';
import { RUNS_CHANNEL } from '../src/platform/database/database-notifications';
import { ArtifactRegistryService } from '../src/platform/artifacts/artifact-registry.service';
import { ApiKeyService } from '../src/platform/identity/api-key.service';
import { benchPool, runBenchmark, startBenchHost } from './harness';
import { RunEngineService } from '../src/capabilities/runs/engine/run-engine.service';
import { RunExecution } from '../src/capabilities/runs/engine/run-execution';
import { FlushBatcher } from '../src/capabilities/runs/engine/run-flush-batcher';
import { RunClaimer } from '../src/capabilities/runs/engine/run-claimer';
import { EagerStart } from '../src/capabilities/runs/engine/run-eager-start';
import type { ClaimedRow, FlushParams } from '../src/capabilities/runs/engine/run-store';
import { RUNS_SETTINGS, RunsSettings } from '../src/capabilities/runs/runs.settings';

const CHAIN = { nodes: [{ id: 'only', typeId: 'core.noop', config: {} }], edges: [] };
/** The backlog's runs: CHAIN, or with --hold=<ms> a run that holds its slot that long. */
let floodChain: Record<string, unknown> = CHAIN;
const WORKFLOW = 'bench.fair';

/** Milliseconds on the wall clock, with fractions (Date.now's epoch). */
const now = () => performance.timeOrigin + performance.now();

/**
 * Where a quiet run's time goes, on this process's clock: created (its request or insert sent) ->
 * woken (the engine's first wake-up after it; none for a run started by its own insert) -> claim
 * sent (its insert's, for a run its insert claims) -> claimed (its execution starts) -> node started
 * -> write queued (its last write handed to the batcher) -> write sent (in a statement of `batch`
 * runs) -> written; answered: the response to its request. `folded`: claimed by a write's folded
 * claim, not by a claim pass. `eager`: started before its insert, which carried its write.
 */
interface Phases { created: number; reserved?: string[]; woken?: number; claimSent?: number; claimed?: number; folded?: boolean; eager?: boolean; node?: number; queued?: number; sent?: number; batch?: number; written?: number; answered?: number; writesAtCreation: number; writesWaited?: number }
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
  // What the creation was promised (a slot of the capacity, of the newcomers' reserve, none), each time it asked.
  wrap(P(RunClaimer), 'reserve', (orig, self, args) => {
    const r = orig.apply(self, args) as { newcomer: boolean } | undefined;
    const t = tracedOf(args[0] as string);
    if (t) (t.reserved ??= []).push(!r ? 'none' : r.newcomer ? 'reserve' : 'capacity');
    return r;
  });
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
    if (t && t.claimed === undefined) Object.assign(t, { claimSent: args[1] as number, claimed: now(), folded: inGive, eager: !!args[2], woken: lastWake >= t.created ? lastWake : undefined });
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
  // A run started before its insert: its first write is the insert (one statement, alone).
  wrap(P(EagerStart), 'flush', (orig, self, args) => {
    const f = args[0] as FlushParams;
    const t = (self as EagerStart).sent ? undefined : tracedOf(f.tenant);
    if (t) Object.assign(t, { queued: now(), sent: now(), batch: 1 });
    const done = orig.apply(self, args) as Promise<unknown>;
    if (!t) return done;
    return done.finally(() => {
      if ((self as EagerStart).written) Object.assign(t, { written: now(), writesWaited: otherWrites - t.writesAtCreation });
    });
  });
}

const PHASES: Array<[string, (t: Phases) => number | undefined]> = [
  ['create->claim sent', (t) => (t.claimSent === undefined ? undefined : t.claimSent - t.created)],
  ['create->woken', (t) => (t.woken === undefined ? undefined : t.woken - t.created)],
  ['claim', (t) => (t.claimed === undefined || t.claimSent === undefined ? undefined : t.claimed - t.claimSent)],
  ['claimed->node', (t) => (t.node === undefined || t.claimed === undefined ? undefined : t.node - t.claimed)],
  ['claimed->write queued', (t) => (t.queued === undefined || t.claimed === undefined ? undefined : t.queued - t.claimed)],
  ['queued->sent', (t) => (t.sent === undefined || t.queued === undefined ? undefined : t.sent - t.queued)],
  ['write', (t) => (t.written === undefined || t.sent === undefined ? undefined : t.written - t.sent)],
  ['written->answered', (t) => (t.answered === undefined || t.written === undefined ? undefined : t.answered - t.written)],
];

/** The median of each phase over the traced runs, one line. */
function phases(ts: Phases[]): string {
  const parts = PHASES.map(([label, f]) => {
    const xs = ts.map(f).filter((x): x is number => x !== undefined);
    return `${label} ${xs.length ? median(xs).toFixed(1) : '-'}`;
  });
  const folded = ts.filter((t) => t.folded).length;
  const eager = ts.filter((t) => t.eager).length;
  const batch = ts.map((t) => t.batch ?? 0);
  const slots = new Map<string, number>();
  for (const t of ts) slots.set((t.reserved ?? ['-']).join('+'), (slots.get((t.reserved ?? ['-']).join('+')) ?? 0) + 1);
  const waited = ts.map((t) => t.writesWaited ?? 0);
  return `${parts.join(', ')} ms; slot promised ${[...slots].map(([k, n]) => `${k} ${n}`).join(', ')}; started by its insert ${eager}/${ts.length}, claimed by a write ${folded}/${ts.length}, write batch p50 ${median(batch)}, other runs' writes answered meanwhile p50 ${median(waited)} (max ${Math.max(...waited)})`;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * Queues `count` runs of `tenant` in one statement, announced on the runs channel: one notification
 * for a batch, or, for a single run, one that names it, as the host announces a run it could not claim.
 */
async function queue(pool: Pool, tenant: string, count: number, chain: Record<string, unknown> = CHAIN): Promise<string[]> {
  // The payload as the host writes it (run-newcomer-claim.ts, announcement): the run's id and tenant.
  const notify = count === 1 ? `SELECT pg_notify('${RUNS_CHANNEL}', ins."id"::text || ' ' || $1) FROM ins` : `SELECT pg_notify('${RUNS_CHANNEL}', '') WHERE EXISTS (SELECT 1 FROM ins)`;
  const r = await pool.query(
    `WITH ins AS (
       INSERT INTO "run" ("tenant", "principal", "kind", "status", "metadata", "workflow_id", "definition_key", "inputs", "configurable", "principal_key")
       SELECT $1, 'bench', 'workflow', 'pending', '{}'::jsonb, '${WORKFLOW}', run_definition_ref($1, $2::jsonb), '{}'::jsonb, '{}'::jsonb, run_principal_ref($1, NULL, '{}'::text[])
       FROM generate_series(1, $3::int) RETURNING "id"
     ), n AS (${notify})
     SELECT "id" FROM ins, (SELECT count(*) FROM n) k`,
    [tenant, JSON.stringify(chain), count],
  );
  return r.rows.map((x: { id: string }) => x.id);
}

/** How the quiet tenant submits a run: answers its id once created. */
type Submit = () => Promise<string>;

/** POST /v1/runs as a client does (keep-alive), answering the run id. */
function poster(baseUrl: string, token: string): Submit {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const body = JSON.stringify({ workflowId: WORKFLOW });
  return () =>
    new Promise((resolve, reject) => {
      const req = http.request(`${baseUrl}/v1/runs`, { method: 'POST', agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 201) return reject(new Error(`POST /v1/runs answered ${res.statusCode}: ${text}`));
          resolve((JSON.parse(text) as { runId: string }).runId);
        });
      });
      req.on('error', reject);
      req.end(body);
    });
}

/**
 * Submits one run of `tenant` and answers its latencies once finished: `db` finish - creation on the
 * database clock, and the traced phases (this process's clock) when traced.
 */
async function oneRun(pool: Pool, submit: Submit, tenant: string, trace?: Phases[], timeoutMs = 600_000): Promise<number> {
  current = trace && tenant === TRACED_TENANT ? { created: now(), writesAtCreation: otherWrites } : undefined;
  const t = current;
  if (t) trace!.push(t);
  const id = await submit();
  if (t) t.answered = now();
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await pool.query(`SELECT "status", extract(epoch FROM ("completed_at" - "created_at")) * 1000 AS ms FROM "run" WHERE "id" = $1`, [id]);
    const row = r.rows[0] as { status: string; ms: number | null } | undefined;
    if (row?.status === 'completed' && row.ms !== null) {
      // Its write is answered in this process once the row reads completed (or a moment later).
      for (let i = 0; t && t.written === undefined && i < 1000; i++) await new Promise((r) => setTimeout(r, 1));
      return Number(row.ms);
    }
    if (row && ['failed', 'cancelled'].includes(row.status)) throw new Error(`run ${id} ended ${row.status}`);
    if (Date.now() > until) throw new Error(`run ${id} did not finish within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function count(pool: Pool, where: string, params: unknown[]): Promise<number> {
  return (await pool.query(`SELECT count(*)::int AS n FROM "run" WHERE ${where}`, params)).rows[0].n as number;
}

/** Medians over the traced runs of one side: until committed (its first write answered), until its node started, until answered. */
function sideOf(ts: Phases[]) {
  const m = (f: (t: Phases) => number | undefined) => median(ts.map((t) => f(t) ?? NaN));
  return { committed: m((t) => (t.written ?? NaN) - t.created), node: m((t) => (t.node ?? NaN) - t.created), answered: m((t) => (t.answered ?? NaN) - t.created) };
}

const spread = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `min ${s[0].toFixed(2)}x, median ${median(s).toFixed(2)}x, max ${s[s.length - 1].toFixed(2)}x`;
};

export async function main(args = process.argv.slice(2)): Promise<void> {
  const sql = args.includes('--sql');
  const holdMs = Number(args.find((a) => a.startsWith('--hold='))?.slice('--hold='.length) ?? 0);
  if (holdMs > 0) floodChain = { nodes: [{ id: 'hold', typeId: 'core.delay', config: { ms: holdMs } }], edges: [] };
  const [backlog = 10_000, rounds = 3, samples = 5] = args.filter((a) => !a.startsWith('--')).map(Number);
  const cap = process.env.OPENWOP_TENANT_MAX_ACTIVE_RUNS;
  const fair = process.env.OPENWOP_FAIR_CLAIMS ?? 'true';
  const bench = await startBenchHost({ OPENWOP_SCHEDULER_ENABLED: 'true', OPENWOP_FAIR_CLAIMS: fair, ...(cap ? { OPENWOP_TENANT_MAX_ACTIVE_RUNS: cap } : {}) });
  const pool = benchPool(bench.databaseUrl, 3);
  const capacity = bench.host.app.get<RunsSettings>(RUNS_SETTINGS).maxActiveRuns;
  const chain = { chainId: WORKFLOW, version: '1.0.0', label: 'one no-op step', description: 'one core.noop node', parameters: { type: 'object' }, dag: CHAIN };
  await bench.host.app.get(ArtifactRegistryService).install('workflow-chain-pack', { name: 'private.bench.fair', version: '1.0.0', kind: 'workflow-chain', engines: { openwop: '^1.0.0' }, chains: [chain] }, { tenant: TRACED_TENANT, principal: 'bench' }, 'bench');
  const { key } = await bench.host.app.get(ApiKeyService).create({ tenant: TRACED_TENANT, principal: 'bench', scopes: ['runs:create', 'runs:read'] });
  const submit: Submit = sql ? async () => (await queue(pool, TRACED_TENANT, 1))[0] : poster(bench.baseUrl, key);
  instrument();
  const load = os.loadavg();
  const results: Array<{ db: number; committed: number; node: number; answered: number; waited: number; left: number }> = [];
  const how = sql ? 'inserted by SQL and announced' : 'POST /v1/runs';
  try {
    // Warm-up: the statements prepared, the engine's first claims made.
    for (let i = 0; i < 3; i++) await oneRun(pool, submit, TRACED_TENANT);
    for (let round = 1; round <= rounds; round++) {
      const idle: number[] = [];
      const idleTrace: Phases[] = [];
      for (let i = 0; i < samples; i++) idle.push(await oneRun(pool, submit, TRACED_TENANT, idleTrace));
      await queue(pool, 'flood', backlog, floodChain);
      // The backlog is being worked off when the quiet tenant's runs arrive (held runs: every slot taken).
      if (holdMs > 0) while ((await count(pool, `"tenant" = 'flood' AND "started_at" IS NOT NULL`, [])) < capacity) await new Promise((r) => setTimeout(r, 5));
      else while ((await count(pool, `"tenant" = 'flood' AND "status" = 'completed'`, [])) === 0) await new Promise((r) => setTimeout(r, 5));
      const busy: number[] = [];
      const busyTrace: Phases[] = [];
      for (let i = 0; i < samples; i++) busy.push(await oneRun(pool, submit, TRACED_TENANT, busyTrace));
      const left = await count(pool, `"tenant" = 'flood' AND "status" = 'pending'`, []);
      const [a, b] = [sideOf(idleTrace), sideOf(busyTrace)];
      const r = { db: median(busy) / median(idle), committed: b.committed / a.committed, node: b.node / a.node, answered: b.answered / a.answered, waited: median(busyTrace.map((t) => t.writesWaited ?? 0)), left };
      results.push(r);
      process.stdout.write(
        `round ${round}: until committed idle p50 ${a.committed.toFixed(1)} ms, behind the backlog p50 ${b.committed.toFixed(1)} ms, ratio ${r.committed.toFixed(2)}x; ` +
          `until its node started ${a.node.toFixed(1)} / ${b.node.toFixed(1)} ms (${r.node.toFixed(2)}x); until answered ${a.answered.toFixed(1)} / ${b.answered.toFixed(1)} ms (${r.answered.toFixed(2)}x); ` +
          `database clock ${median(idle).toFixed(1)} / ${median(busy).toFixed(1)} ms (${r.db.toFixed(2)}x); ${left} of ${backlog} still queued after\n`,
      );
      process.stdout.write(`  idle:   ${phases(idleTrace)}\n  behind: ${phases(busyTrace)}\n`);
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
    const pick = (f: (r: (typeof results)[number]) => number) => spread(results.map(f));
    const headline = results.map((r) => (sql ? r.db : r.committed));
    const met = median([...headline].sort((x, y) => x - y)) <= 2;
    const waited = results.map((r) => r.waited).sort((x, y) => x - y);
    process.stdout.write(
      `\nFair scheduling (OPENWOP_FAIR_CLAIMS=${fair}${cap ? `, OPENWOP_TENANT_MAX_ACTIVE_RUNS=${cap}` : ''}): another tenant's single run (${how}) behind a ${backlog}-run backlog${holdMs > 0 ? ` of runs holding their slots ${holdMs} ms` : ''} / idle, ${rounds} round(s) of ${samples} samples, ` +
        `load average ${load.map((l) => l.toFixed(2)).join(' ')} at the start, ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} at the end:\n` +
        (sql ? `database clock (finish - creation): ratio ${pick((r) => r.db)} (target <= 2: ${met ? 'met' : 'NOT met'})\n` : '') +
        `until committed (its first write answered, this process's clock): ratio ${pick((r) => r.committed)}${sql ? '' : ` (target <= 2: ${met ? 'met' : 'NOT met'})`}\n` +
        `until its node started: ratio ${pick((r) => r.node)}; until ${sql ? 'its insert was answered' : 'the response arrived'}: ratio ${pick((r) => r.answered)}\n` +
        `other runs' writes answered while a quiet run was in flight, per round p50: min ${waited[0]}, median ${median(waited)}, max ${waited[waited.length - 1]}\n`,
    );
  } finally {
    await pool.end();
    await bench.close();
  }
}

runBenchmark(module, () => main());
