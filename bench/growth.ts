/**
 * `npm run bench -- growth [grown] [runs=1000000] [rounds=3] [tenants=50] [--keep] [--reuse=<database>]` (no
 * argument, or `grown`): fresh against grown databases (./growth/grown.ts). A number first: the storage mode below.
 *
 * Storage benchmark: bytes a completed run leaves in the database. Creates `runs` runs of a 3-node
 * `core.noop` chain through POST /v1/runs (`concurrency` requests in flight) on a host with a fresh
 * database, waits until every one has completed, and prints the growth of each relation the runs
 * write (heap, TOAST, each index; pg_relation_size of every fork) divided by the number of runs.
 *
 *   npm run bench -- growth [runs=2000] [concurrency=16] [--keep]
 *
 * `--keep` leaves the database in place (its URL is printed) for reading the rows and the plans.
 *
 * Uses DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) to create and drop a
 * scratch database. Sizes are what the files hold when the last run completed (dead row versions
 * the runs' updates left included: autovacuum may have reclaimed some of them, not shrunk a file),
 * then, in a second column, with the heaps rewritten by VACUUM FULL (the indexes as written).
 */
import 'reflect-metadata';
import * as http from 'node:http';
import * as os from 'node:os';
import type { AddressInfo } from 'node:net';
import { Pool } from 'pg';
import type { Host } from '../src/bootstrap';
import { ArtifactRegistryService } from '../src/platform/artifacts/artifact-registry.service';
import { ApiKeyService } from '../src/platform/identity/api-key.service';
import { BENCH_RATE_BUDGETS, benchPool, bootQuietHost, createBenchDatabase, runBenchmark } from './harness';
import { grown } from './growth/grown';

const TENANT = 'tenant-0';
const NODES = 3;

/** One row per relation of the tables a run writes: the table's heap (every fork), its TOAST table, each index. */
const SIZES = `
  SELECT t.relname AS "table", 'heap' AS "part", pg_table_size(t.oid) - COALESCE(pg_total_relation_size(NULLIF(t.reltoastrelid, 0)), 0) AS "bytes"
  FROM pg_class t WHERE t.relname = ANY($1) AND t.relkind = 'r' AND t.relnamespace = 'public'::regnamespace
  UNION ALL
  SELECT t.relname, 'toast', COALESCE(pg_total_relation_size(NULLIF(t.reltoastrelid, 0)), 0)
  FROM pg_class t WHERE t.relname = ANY($1) AND t.relkind = 'r' AND t.relnamespace = 'public'::regnamespace
  UNION ALL
  SELECT t.relname, 'index ' || i.relname, pg_relation_size(i.oid)
  FROM pg_class t JOIN pg_index x ON x.indrelid = t.oid JOIN pg_class i ON i.oid = x.indexrelid
  WHERE t.relname = ANY($1) AND t.relkind = 'r' AND t.relnamespace = 'public'::regnamespace`;

// The stored definitions and principals runs refer to count too (a row per tenant and content: none per run).
const TABLES = ['run', 'run_definition', 'run_principal', 'run_node', 'event', 'event_stream'];

type Sizes = Map<string, number>;

/** Rewrites the tables of TABLES the schema has (VACUUM FULL): their heaps packed at their fillfactor, their indexes rebuilt. */
async function compact(pool: Pool): Promise<void> {
  const present = (await pool.query(`SELECT relname FROM pg_class WHERE relname = ANY($1) AND relkind = 'r' AND relnamespace = 'public'::regnamespace`, [TABLES])).rows as Array<{ relname: string }>;
  await pool.query(`VACUUM FULL ${present.map((t) => `"${t.relname}"`).join(', ')}`);
}

async function sizes(pool: Pool): Promise<Sizes> {
  const rows = (await pool.query(SIZES, [TABLES])).rows as Array<{ table: string; part: string; bytes: string }>;
  return new Map(rows.map((r) => [`${r.table}\t${r.part}`, Number(r.bytes)]));
}

/** The other relations of the database that grew while the runs ran (an unexpected writer shows up here). */
async function otherGrowth(pool: Pool): Promise<Map<string, number>> {
  const rows = (await pool.query(
    `SELECT c.relname AS "name", pg_total_relation_size(c.oid) AS "bytes" FROM pg_class c
     WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace AND NOT c.relname = ANY($1)`,
    [TABLES],
  )).rows as Array<{ name: string; bytes: string }>;
  return new Map(rows.map((r) => [r.name, Number(r.bytes)]));
}

function post(agent: http.Agent, base: string, auth: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}/v1/runs`, { method: 'POST', agent, headers: { authorization: auth, 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

export async function main(args = process.argv.slice(2).filter((a) => a !== '--keep'), keep = process.argv.includes('--keep')): Promise<void> {
  if (args[0] === undefined || args[0] === 'grown') return grown([...args.slice(1), ...(keep ? ['--keep'] : [])]);
  const runs = Number(args[0] ?? 2000);
  const concurrency = Number(args[1] ?? 16);
  const db = await createBenchDatabase('bench_growth');
  let host: Host | undefined;
  const pool = benchPool(db.url.toString());
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  try {
    host = await bootQuietHost(db.url.toString(), 'bench-growth', { runs: { maxActiveRuns: 48 } }, { OPENWOP_SCHEDULER_ENABLED: 'true', ...BENCH_RATE_BUDGETS });
    await host.app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(host.app.getHttpServer().address() as AddressInfo).port}`;
    const nodes = Array.from({ length: NODES }, (_, i) => ({ id: `n${i + 1}`, typeId: 'core.noop', config: { step: i + 1 } }));
    const dag = { nodes, edges: nodes.slice(1).map((x, i) => ({ from: nodes[i].id, to: x.id })) };
    const chain = { chainId: 'bench.growth', version: '1.0.0', label: `${NODES} no-op steps`, description: `${NODES} core.noop nodes in a chain`, parameters: { type: 'object' }, dag };
    await host.app.get(ArtifactRegistryService).install('workflow-chain-pack', { name: 'private.bench.growth', version: '1.0.0', kind: 'workflow-chain', engines: { openwop: '^1.0.0' }, chains: [chain] }, { tenant: TENANT, principal: 'bench' }, 'bench');
    const { key } = await host.app.get(ApiKeyService).create({ tenant: TENANT, principal: 'bench', scopes: ['runs:create', 'runs:read'] });
    const auth = `Bearer ${key}`;
    const body = JSON.stringify({ workflowId: 'bench.growth' });

    // Compacted first, so the second column below is the runs' rows alone.
    await compact(pool);
    const before = await sizes(pool);
    const othersBefore = await otherGrowth(pool);
    const started = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < runs) {
          next++;
          const status = await post(agent, base, auth, body);
          if (status !== 201) throw new Error(`POST /v1/runs answered ${status}`);
        }
      }),
    );
    for (;;) {
      const r = (await pool.query(`SELECT count(*) FILTER (WHERE "status" = 'completed')::int AS "done", count(*) FILTER (WHERE "status" NOT IN ('pending', 'running', 'completed'))::int AS "bad" FROM "run"`)).rows[0] as { done: number; bad: number };
      if (r.bad) throw new Error(`${r.bad} runs neither pending, running nor completed`);
      if (r.done >= runs) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    const seconds = (Date.now() - started) / 1000;
    const events = (await pool.query(`SELECT count(*)::int AS n FROM "event"`)).rows[0].n as number;
    const after = await sizes(pool);
    const othersAfter = await otherGrowth(pool);
    // The same tables rewritten (VACUUM FULL): what the rows take at each table's fillfactor, without the
    // pages concurrent inserts added ahead of use or left part-filled, nor dead versions. A small sample
    // written by 16 clients leaves many such pages (a steady stream fills them), so this column compares
    // code versions more steadily than the first. Its indexes are those as written: a rebuilt index is
    // packed tighter than one that grows by inserts ever is.
    await compact(pool);
    const compacted = await sizes(pool);


    process.stdout.write(`\nStorage per completed run: ${runs} runs of a ${NODES}-node core.noop chain through POST /v1/runs (${concurrency} in flight), ${seconds.toFixed(1)} s; ${(events / runs).toFixed(1)} events per run; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}\n\n`);
    process.stdout.write(`${'relation (bytes/run)'.padEnd(48)}${'as written'.padStart(12)}${'compacted'.padStart(12)}\n`);
    const cell = (n: number) => n.toFixed(0).padStart(12);
    let total = 0;
    let totalCompacted = 0;
    for (const table of TABLES) {
      let sum = 0;
      let sumCompacted = 0;
      const lines: string[] = [];
      for (const [k, v] of after) {
        const [t, part] = k.split('\t');
        if (t !== table) continue;
        const grew = (v - (before.get(k) ?? 0)) / runs;
        const grewCompacted = part.startsWith('index ') ? grew : ((compacted.get(k) ?? 0) - (before.get(k) ?? 0)) / runs;
        sum += grew;
        sumCompacted += grewCompacted;
        lines.push(`  ${part.padEnd(46)}${cell(grew)}${cell(grewCompacted)}`);
      }
      total += sum;
      totalCompacted += sumCompacted;
      process.stdout.write(`${table.padEnd(48)}${cell(sum)}${cell(sumCompacted)}\n${lines.join('\n')}\n`);
    }
    process.stdout.write(`${'total'.padEnd(48)}${cell(total)}${cell(totalCompacted)}\n`);
    const others = [...othersAfter].map(([name, v]) => [name, (v - (othersBefore.get(name) ?? 0)) / runs] as const).filter(([, g]) => g > 0);
    if (others.length) process.stdout.write(`other relations that grew: ${others.map(([n, g]) => `${n} ${g.toFixed(0)}`).join(', ')}\n`);
  } finally {
    agent.destroy();
    await pool.end().catch(() => undefined);
    await host?.close().catch(() => undefined);
    if (keep) process.stdout.write(`database kept: ${db.url.toString()}\n`);
    else await db.drop();
  }
}

runBenchmark(module, () => main());
