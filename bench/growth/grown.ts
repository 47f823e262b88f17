/**
 * Fresh against grown: the same measurements on a host whose database holds only what the benchmark
 * writes (fresh, a new database each round) and on one grown to `runs` runs (seeded once, from runs
 * the host wrote: ./seed.ts), alternating which goes first, `rounds` rounds. Per side: submission
 * (POST /v1/runs, 8 in flight), idle latency (one run at a time, creation to finish on the database
 * clock), the run list's first page (unfiltered, a sparse status, a cursor 2,000 runs deep), the event
 * poll of a finished run, the claim rate (a backlog of pending runs worked off by the engine), the
 * retention sweep's time per expired run (that backlog, aged past the window, and copies of its rows:
 * 20,000 expired runs) and bytes per run (the run tables' total size over the runs in the database,
 * before the sweep). Prints each round's figures, min / median / max of grown / fresh, and the sweep's
 * rate over the engine's completion rate on the same side of the same round.
 *
 * Like for like: the measured tenant has exactly SPARSE_RUNS failed runs on either side when its lists
 * are read (equal pages); before each side the benchmark's databases are left without an autovacuum
 * worker and a checkpoint is taken (settle). Beside the claim rate: the WAL written meanwhile (the
 * server's, other databases' writes included) and the blocks read from outside the shared buffers per
 * run; beside the sparse list: its page's rows and its statement's time and buffers (EXPLAIN ANALYZE).
 *
 *   npm run bench -- growth [grown] [runs=1000000] [rounds=3] [tenants=50] [--keep] [--reuse=<database>]
 *
 * `--keep` leaves the grown database in place (its name is printed); `--reuse=<name>` measures such a
 * database again instead of seeding one (it holds the runs the earlier rounds added). Rounds 0: seed only.
 */
import * as http from 'node:http';
import * as os from 'node:os';
import type { AddressInfo } from 'node:net';
import type { Pool } from 'pg';
import type { Host } from '../../src/bootstrap';
import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';
import { ApiKeyService } from '../../src/platform/identity/api-key.service';
import { RetentionService } from '../../src/platform/retention/retention.service';
import { BENCH_RATE_BUDGETS, benchPool, bootQuietHost, createBenchDatabase, insertPendingRuns, measure } from '../harness';
import { explainList } from './explain';
import { replicate, TemplateTable } from './seed';

const TENANT = 'tenant-0';
const NODES = 3;
const TEMPLATES = 50;
/** Long enough (several seconds at this machine's rates) that a neighbour's burst moves the rate less. */
const CLAIM_BACKLOG = 5000;
/** Expired runs the retention sweep deletes per side: the claim backlog's runs and copies of them (./seed.ts). */
const RETENTION_SAMPLE = 20_000;
const IDLE_SAMPLES = 30;
const WINDOW_S = 3;
const DEEP = 2000;
const SPARSE_EVERY = 1000;
/** Failed runs of the measured tenant on either side when its lists are read: what one in SPARSE_EVERY gives its 20,000 runs at a million. */
const SPARSE_RUNS = 20;

const nodes = Array.from({ length: NODES }, (_, i) => ({ id: `n${i + 1}`, typeId: 'core.noop', config: { step: i + 1 } }));
const edges = nodes.slice(1).map((x, i) => ({ from: nodes[i].id, to: x.id }));
const chain = { chainId: 'bench.growth', version: '1.0.0', label: `${NODES} no-op steps`, description: `${NODES} core.noop nodes in a chain`, parameters: { type: 'object' }, dag: { nodes, edges } };

const loadavg = () => os.loadavg()[0];

function request(base: string, auth: string, method: string, path: string, body?: string): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method, headers: { authorization: auth, 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface Side {
  host: Host;
  base: string;
  auth: string;
  pool: Pool;
  close(): Promise<void>;
}

/** The host on `url`, listening, with the chain installed for tenant-0 (once per database) and a fresh key. */
async function boot(url: string): Promise<Side> {
  const host = await bootQuietHost(url, 'bench-growth', { runs: { maxActiveRuns: 48 } }, { OPENWOP_SCHEDULER_ENABLED: 'true', OPENWOP_RUN_RETENTION_DAYS: '30', ...BENCH_RATE_BUDGETS });
  await host.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(host.app.getHttpServer().address() as AddressInfo).port}`;
  const pool = benchPool(url);
  const installed = (await pool.query(`SELECT count(*)::int AS n FROM "run" WHERE "tenant" = $1`, [TENANT])).rows[0].n > 0;
  if (!installed) {
    await host.app
      .get(ArtifactRegistryService)
      .install('workflow-chain-pack', { name: 'private.bench.growth', version: '1.0.0', kind: 'workflow-chain', engines: { openwop: '^1.0.0' }, chains: [chain] }, { tenant: TENANT, principal: 'bench' }, 'bench');
  }
  const { key } = await host.app.get(ApiKeyService).create({ tenant: TENANT, principal: 'bench', scopes: ['runs:create', 'runs:read'] });
  return {
    host,
    base,
    auth: `Bearer ${key}`,
    pool,
    async close() {
      await pool.end().catch(() => undefined);
      await host.close().catch(() => undefined);
    },
  };
}

/**
 * Runs not finished, counted from `run_active_idx` (its predicate, so the partial index answers): a handful of
 * entries on either side. The progress polls must cost the same on both: a count of the runs created since a
 * time has no index of its own on `run` and read the whole of `run_tenant_created_idx` on the grown side every
 * 50 ms while the engine worked off the claim backlog (3,136 buffers and 268 ms a poll at 200,000 runs).
 */
const ACTIVE = `SELECT count(*)::int AS n FROM "run" WHERE "kind" = 'workflow' AND "status" IN ('pending', 'running', 'waiting-approval', 'waiting-input', 'waiting-external', 'cancelling')`;

async function waitIdle(pool: Pool, every = 100): Promise<void> {
  for (;;) {
    const n = (await pool.query(ACTIVE)).rows[0].n as number;
    if (!n) return;
    await new Promise((r) => setTimeout(r, every));
  }
}

/** The runs of the measured tenant created since `since` (the host idle before: a backlog's), by state: the tenant's index range. */
async function createdSince(pool: Pool, since: Date): Promise<{ n: number; done: number; bad: number; ids: string[] }> {
  const rows = (await pool.query(`SELECT "id"::text AS id, "status" FROM "run" WHERE "tenant" = $1 AND "created_at" >= $2`, [TENANT, since])).rows as Array<{ id: string; status: string }>;
  return { n: rows.length, done: rows.filter((r) => r.status === 'completed').length, bad: rows.filter((r) => !['pending', 'running', 'completed'].includes(r.status)).length, ids: rows.map((r) => r.id) };
}

/**
 * Before each side: no autovacuum worker running on the benchmark's databases (what one side's writes
 * set off must not run during the other's measurements; at most 2 minutes), then a checkpoint, so each
 * side starts with no dirty buffers of the other's and its claim phase at the same place in the
 * checkpoint cycle (early: every page it touches first writes its full image to the WAL, on either side).
 */
async function settle(pool: Pool, databases: string[]): Promise<void> {
  const until = Date.now() + 120_000;
  const busy = async () => (await pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND datname = ANY($1)`, [databases])).rows[0].n > 0;
  while (Date.now() < until && (await busy())) await new Promise((r) => setTimeout(r, 500));
  await pool.query('CHECKPOINT');
}

/** The server's WAL position (bytes), its checkpoints so far, and the blocks this database read from outside its buffers. */
async function serverCounters(pool: Pool): Promise<{ wal: number; checkpoints: number; read: number }> {
  // pg_stat_database is what backends published: let the last second's work arrive.
  await new Promise((r) => setTimeout(r, 1100));
  const r = (
    await pool.query(
      `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 AS wal, (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter)::int AS checkpoints,
              (SELECT blks_read FROM pg_stat_database WHERE datname = current_database())::float8 AS read`,
    )
  ).rows[0] as { wal: number; checkpoints: number; read: number };
  return r;
}

/** `n` runs through POST /v1/runs, `concurrency` at a time; their ids. */
async function submit(s: Side, n: number, concurrency = 8): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        const r = await request(s.base, s.auth, 'POST', '/v1/runs', JSON.stringify({ workflowId: 'bench.growth' }));
        if (r.status !== 201) throw new Error(`POST /v1/runs answered ${r.status}`);
        ids.push(r.json.runId ?? r.json.id);
      }
    }),
  );
  return ids;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

export type Figures = Record<string, number>;

/** Every figure of one side. */
async function measureSide(s: Side, pollRun: string): Promise<Figures> {
  const f: Figures = {};
  const headers = { authorization: s.auth, 'content-type': 'application/json' };
  const sub = await measure('submit', `${s.base}/v1/runs`, { method: 'POST', body: JSON.stringify({ workflowId: 'bench.growth' }), headers, connections: 8, durationSec: WINDOW_S });
  if (sub.errors || sub.non2xx) throw new Error(`submission: ${sub.errors} errors, ${sub.non2xx} non-2xx`);
  Object.assign(f, { 'submit req/s': sub.requestsPerSec, 'submit p50 ms': sub.p50Ms, 'submit p99 ms': sub.p99Ms });
  await waitIdle(s.pool);

  // Idle latency: one run at a time, from sending its POST to reading it completed (the run row, read every 2 ms).
  const lat: number[] = [];
  for (let i = 0; i < IDLE_SAMPLES; i++) {
    const t = process.hrtime.bigint();
    const [id] = await submit(s, 1, 1);
    for (;;) {
      const r = (await s.pool.query(`SELECT "status" FROM "run" WHERE "id" = $1`, [id])).rows[0] as { status: string };
      if (r.status === 'completed') {
        lat.push(Number(process.hrtime.bigint() - t) / 1e6);
        break;
      }
      if (r.status !== 'pending' && r.status !== 'running') throw new Error(`idle run ended ${r.status}`);
      await new Promise((res) => setTimeout(res, 2));
    }
  }
  Object.assign(f, { 'idle p50 ms': pct(lat, 50), 'idle p99 ms': pct(lat, 99) });

  // Claim: a backlog of pending runs (as POST /v1/runs writes them when no slot is free), worked off.
  // The host is idle: every run created from here on is the backlog's.
  const since = (await s.pool.query(`SELECT now() AS t`)).rows[0].t as Date;
  const before = await serverCounters(s.pool);
  const t0 = Date.now();
  await insertPendingRuns(s.pool, CLAIM_BACKLOG, { definition: { workflowId: 'bench.growth', nodes, edges } as { workflowId: string }, tenants: 1 });
  await waitIdle(s.pool, 50);
  f['claim runs/s'] = CLAIM_BACKLOG / ((Date.now() - t0) / 1000);
  const backlogRuns = await createdSince(s.pool, since);
  if (backlogRuns.bad || backlogRuns.done !== CLAIM_BACKLOG) throw new Error(`claim backlog: ${backlogRuns.done} of ${CLAIM_BACKLOG} completed, ${backlogRuns.bad} neither pending, running nor completed`);
  const after = await serverCounters(s.pool);
  f['claim WAL KB/run'] = (after.wal - before.wal) / 1024 / CLAIM_BACKLOG;
  f['claim blocks read/run'] = (after.read - before.read) / CLAIM_BACKLOG;
  f['claim checkpoints'] = after.checkpoints - before.checkpoints;
  await waitIdle(s.pool);

  // The sparse status: exactly SPARSE_RUNS failed runs of the measured tenant on either side, spread evenly over
  // its history (the seed's one in SPARSE_EVERY of the grown tenant's runs are made completed or failed to that end),
  // so both sides answer a page of as many rows and the ratio measures the growth, not the page's size.
  await s.pool.query(
    `WITH t AS (SELECT "id", "status", row_number() OVER (ORDER BY "created_at", "id") AS i, count(*) OVER () AS n FROM "run" WHERE "tenant" = $1 AND "status" IN ('completed', 'failed'))
     UPDATE "run" r SET "status" = CASE WHEN (t.i * $2::int) % t.n < $2::int THEN 'failed' ELSE 'completed' END
     FROM t WHERE r."id" = t."id" AND (t."status" = 'failed') <> ((t.i * $2::int) % t.n < $2::int)`,
    [TENANT, SPARSE_RUNS],
  );
  const failed = Number((await s.pool.query(`SELECT count(*)::int AS n FROM "run" WHERE "tenant" = $1 AND "status" = 'failed'`, [TENANT])).rows[0].n);
  if (failed !== SPARSE_RUNS) throw new Error(`the measured tenant has ${failed} failed runs, not ${SPARSE_RUNS}`);
  // Statistics on both sides before the lists: the grown side's are the seed's, while a fresh database's run table
  // has none yet (autovacuum's first ANALYZE comes a minute or more after its first rows), and without them the
  // planner sorts the tenant's whole history for a first page (13.9 ms against 0.08 once analysed, 9,000 runs).
  await s.pool.query('ANALYZE "run"');
  // The failed page's statement as the request sent it, run again under EXPLAIN (ANALYZE, BUFFERS): the pages it touches.
  const plan = await explainList(s.pool, async () => {
    f['list failed rows'] = ((await request(s.base, s.auth, 'GET', '/v1/runs?limit=50&status=failed')).json.runs as unknown[]).length;
  });
  Object.assign(f, { 'list failed SQL ms': plan.ms, 'list failed buffers': plan.buffers, 'list failed buffers read': plan.read });
  // The unfiltered page too: a small table may be planned otherwise than a grown one (its shape is printed).
  const whole = await explainList(s.pool, () => request(s.base, s.auth, 'GET', '/v1/runs?limit=50'));
  Object.assign(f, { 'list SQL ms': whole.ms, 'list buffers': whole.buffers });
  process.stdout.write(`  list plans: unfiltered ${whole.shape}; status=failed ${plan.shape}\n`);
  const lists: Array<[string, string]> = [
    ['list', '/v1/runs?limit=50'],
    ['list failed', '/v1/runs?limit=50&status=failed'],
  ];
  let cursor: string | undefined;
  for (let seen = 0; seen < DEEP; seen += 500) {
    const r = await request(s.base, s.auth, 'GET', `/v1/runs?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (r.status !== 200 || !r.json.nextCursor) throw new Error(`paging to ${DEEP}: ${r.status}`);
    cursor = r.json.nextCursor as string;
  }
  lists.push(['list deep', `/v1/runs?limit=50&cursor=${encodeURIComponent(cursor!)}`]);
  lists.push(['poll', `/v1/runs/${pollRun}/events/poll?lastSequence=0&timeout=0`]);
  // A run's snapshot, as a client polling its status reads it (one statement: the row and what it shows of it).
  lists.push(['run read', `/v1/runs/${pollRun}`]);
  for (const [label, path] of lists) {
    const m = await measure(label, `${s.base}${path}`, { headers: { authorization: s.auth }, connections: 8, durationSec: WINDOW_S });
    if (m.errors || m.non2xx) throw new Error(`${label}: ${m.errors} errors, ${m.non2xx} non-2xx`);
    Object.assign(f, { [`${label} p50 ms`]: m.p50Ms, [`${label} p99 ms`]: m.p99Ms, [`${label} req/s`]: m.requestsPerSec });
  }

  f['runs in database'] = Number((await s.pool.query(`SELECT count(*)::float8 AS n FROM "run"`)).rows[0].n);
  f['bytes/run'] = Number(
    (
      await s.pool.query(
        `SELECT sum(pg_total_relation_size(c.oid))::float8 / (SELECT count(*) FROM "run") AS b FROM pg_class c
         WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace AND c.relname = ANY($1)`,
        [['run', 'run_definition', 'run_principal', 'run_node', 'event', 'event_stream']],
      )
    ).rows[0].b,
  );
  // Retention: the backlog's runs, aged past the window, with copies of every row of theirs (40 to 41 days old) up to
  // RETENTION_SAMPLE expired runs, swept without pauses: enough batches for the sweep's sizing to settle.
  const backlog = backlogRuns.ids;
  await s.pool.query(`UPDATE "run" SET "completed_at" = now() - interval '40 days' WHERE "id" = ANY($1::uuid[])`, [backlog]);
  await replicate(s.pool, backlog, { copies: Math.ceil(RETENTION_SAMPLE / backlog.length) - 1, tenants: 50, spreadDays: 1, sparseEvery: SPARSE_EVERY });
  // Statistics as autovacuum keeps them on a database that grew over time (the fresh one's would still describe 2,000 runs).
  await s.pool.query('ANALYZE');
  const expired = Number((await s.pool.query(`SELECT count(*)::int AS n FROM "run" WHERE coalesce("completed_at", "created_at") < now() - interval '30 days'`)).rows[0].n);
  const sweep = await s.host.app.get(RetentionService).sweep(undefined, { dutyPercent: 100, budgetMs: 3_600_000 });
  if (sweep.runs < expired) throw new Error(`the sweep deleted ${sweep.runs} of ${expired} expired runs`);
  f['retention ms/run'] = sweep.durationMs / sweep.runs;
  f['retention runs/s'] = sweep.runs / (sweep.durationMs / 1000);
  f['retention batches'] = sweep.batches;
  f['retention / claim rate'] = f['retention runs/s'] / f['claim runs/s'];

  f['load average'] = loadavg();
  return f;
}

/** Figures where more is better (the ratio goal reads the other way). */
const HIGHER = new Set(['submit req/s', 'claim runs/s', 'retention runs/s', 'list req/s', 'list failed req/s', 'list deep req/s', 'poll req/s', 'run read req/s']);
const GOALS: Record<string, string> = {
  'list p50 ms': '<= 1.5',
  'list p99 ms': '<= 1.5',
  'list failed p50 ms': '<= 1.5',
  'list failed p99 ms': '<= 1.5',
  'list deep p50 ms': '<= 1.5',
  'list deep p99 ms': '<= 1.5',
  'poll p50 ms': '<= 1.5',
  'poll p99 ms': '<= 1.5',
  'run read p50 ms': '<= 1.5',
  'run read p99 ms': '<= 1.5',
  'claim runs/s': '>= 0.8',
  'retention ms/run': '<= 1.5',
};

/** A database grown to `runs` runs: template runs written by the host, then copied (./seed.ts); the template run ids. */
async function seed(url: string, runs: number, tenants: number, out: (s: string) => void): Promise<string[]> {
  const seedStart = Date.now();
  const s = await boot(url);
  let templates: string[];
  try {
    templates = await submit(s, TEMPLATES);
    await waitIdle(s.pool);
  } finally {
    await s.close();
  }
  const pool = benchPool(url);
  let tables: TemplateTable[];
  try {
    const copies = Math.max(0, Math.ceil((runs - TEMPLATES) / TEMPLATES));
    let last = Date.now();
    tables = await replicate(pool, templates, {
      copies,
      tenants,
      spreadDays: 20,
      sparseEvery: SPARSE_EVERY,
      progress: (done) => {
        if (Date.now() - last < 30_000 && done < copies) return;
        last = Date.now();
        out(`seeded ${(done * TEMPLATES).toLocaleString('en')} runs, ${((Date.now() - seedStart) / 1000).toFixed(0)} s, load average ${loadavg().toFixed(2)}`);
      },
    });
    for (const t of tables) await pool.query(`VACUUM (ANALYZE) "${t.table}"`);
  } finally {
    await pool.end();
  }
  out(`grown database: ${runs.toLocaleString('en')} runs over ${tenants} tenants, copied from ${TEMPLATES} runs the host wrote (${tables.map((t) => `${t.table} ${(t.rows / TEMPLATES).toFixed(1)}/run`).join(', ')}), ${((Date.now() - seedStart) / 1000).toFixed(0)} s`);
  return templates;
}

/** A database grown by an earlier run with `--keep`, by name; it is kept again (drop it by hand when done). */
function reusedDatabase(name: string): { name: string; url: URL; drop(): Promise<void> } {
  const url = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  url.pathname = `/${name}`;
  return { name, url, drop: async () => undefined };
}

/** The template runs of a grown database: tenant-0's first streams (the host wrote them before any copy). */
async function templatesOf(url: string): Promise<string[]> {
  const pool = benchPool(url);
  try {
    return ((await pool.query(`SELECT "stream_id" FROM "event_stream" WHERE "tenant" = $1 ORDER BY "key" LIMIT $2`, [TENANT, TEMPLATES])).rows as Array<{ stream_id: string }>).map((r) => r.stream_id);
  } finally {
    await pool.end();
  }
}

export async function grown(all: string[]): Promise<void> {
  const args = all.filter((a) => !a.startsWith('--'));
  const keep = all.includes('--keep');
  const reuse = all.find((a) => a.startsWith('--reuse='))?.slice('--reuse='.length);
  const runs = Number(args[0] ?? 1_000_000);
  const rounds = Number(args[1] ?? 3);
  const tenants = Number(args[2] ?? 50);
  const out = (s: string) => process.stdout.write(`${s}\n`);
  const db = reuse ? reusedDatabase(reuse) : await createBenchDatabase('bench_grown');
  try {
    let templates: string[];
    if (reuse) {
      templates = await templatesOf(db.url.toString());
      out(`grown database ${db.name} reused`);
    } else templates = await seed(db.url.toString(), runs, tenants, out);
    const results: Array<{ fresh: Figures; grown: Figures }> = [];
    for (let round = 0; round < rounds; round++) {
      const r: Partial<{ fresh: Figures; grown: Figures }> = {};
      for (const side of round % 2 === 0 ? (['fresh', 'grown'] as const) : (['grown', 'fresh'] as const)) {
        const fresh = side === 'fresh' ? await createBenchDatabase('bench_fresh') : undefined;
        const sd = await boot((fresh?.url ?? db.url).toString());
        try {
          const pollRun = side === 'fresh' ? (await submit(sd, TEMPLATES))[0] : templates[0];
          await waitIdle(sd.pool);
          await settle(sd.pool, [db.name, ...(fresh ? [fresh.name] : [])]);
          r[side] = await measureSide(sd, pollRun);
        } finally {
          await sd.close();
          await fresh?.drop();
        }
        out(`round ${round + 1} ${side}: ${Object.entries(r[side]!).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}`);
      }
      results.push(r as { fresh: Figures; grown: Figures });
    }

    if (!results.length) return;
    out(`\ngrown (${runs.toLocaleString('en')} runs) / fresh, ${rounds} rounds: min / median / max (per round)`);
    for (const k of Object.keys(results[0].fresh)) {
      if (k === 'runs in database' || k === 'load average' || k === 'retention batches' || k === 'claim checkpoints') continue;
      const ratios = results.map((x) => x.grown[k] / x.fresh[k]);
      const [mn, md, mx] = [pct(ratios, 0), pct(ratios, 50), pct(ratios, 100)];
      const goal = GOALS[k];
      const met = goal ? (goal.startsWith('<=') ? mx <= Number(goal.slice(3)) : mn >= Number(goal.slice(3))) : undefined;
      out(`${k.padEnd(22)} ${mn.toFixed(2).padStart(6)} ${md.toFixed(2).padStart(6)} ${mx.toFixed(2).padStart(6)}  (${ratios.map((x) => x.toFixed(2)).join(', ')})${goal ? `  goal ${goal}: ${met ? 'met' : 'NOT met'}` : ''}${HIGHER.has(k) ? '  (higher is better)' : ''}`);
    }
    const g = results.map((x) => x.grown);
    const rate = (k: string) => `${pct(g.map((x) => x[k]), 0).toFixed(0)} / ${pct(g.map((x) => x[k]), 50).toFixed(0)} / ${pct(g.map((x) => x[k]), 100).toFixed(0)}`;
    out(`grown database: retention sweep ${rate('retention runs/s')} runs deleted/s, engine ${rate('claim runs/s')} runs completed/s (min / median / max); load average ${results.map((x) => `${x.fresh['load average'].toFixed(1)}/${x.grown['load average'].toFixed(1)}`).join(', ')} (fresh/grown per round)`);
    const times = (side: 'fresh' | 'grown') => {
      const r = results.map((x) => x[side]['retention / claim rate']);
      return `${pct(r, 0).toFixed(1)} / ${pct(r, 50).toFixed(1)} / ${pct(r, 100).toFixed(1)}`;
    };
    out(`retention sweep / engine completion rate, same side, same round (min / median / max): grown ${times('grown')}, fresh ${times('fresh')}; goal >= 10`);
  } finally {
    if (keep) out(`grown database kept: ${db.name} (--reuse=${db.name})`);
    else await db.drop();
  }
}
