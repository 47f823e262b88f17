/**
 * What the database does for one request: the run list's statement, as the host sends it during a
 * request to `path` (captured from the driver's clients, like test/operations/list-plans.e2e-spec.ts),
 * run again under EXPLAIN (ANALYZE, BUFFERS): its execution time, the buffers it touched and how many
 * of them came from outside PostgreSQL's shared buffers (the operating system's cache or the disk).
 */
import { Client as PgClient, Pool } from 'pg';

export interface ListPlan {
  ms: number;
  buffers: number;
  read: number;
  rows: number;
  /** The page's read, from its Limit inwards (`Limit > Index Scan run_tenant_created_idx`). */
  shape: string;
}

interface PlanNode {
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  'Actual Rows'?: number;
  'Node Type'?: string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** The plan's Limit (the page's read under the window and the per-row lookups), or the plan itself. */
function pageRead(n: PlanNode): PlanNode | undefined {
  if (n['Node Type'] === 'Limit') return n;
  for (const c of n.Plans ?? []) {
    const found = pageRead(c);
    if (found) return found;
  }
  return undefined;
}

function shapeOf(n: PlanNode): string {
  const here = [n['Node Type'], n['Index Name'] ?? n['Relation Name']].filter(Boolean).join(' ');
  const below = (n.Plans ?? []).map(shapeOf);
  return below.length ? `${here} > ${below.length > 1 ? `(${below.join(', ')})` : below[0]}` : here;
}

export async function explainList(pool: Pool, get: () => Promise<unknown>): Promise<ListPlan> {
  const captured: Array<{ sql: string; params: unknown[] }> = [];
  const original = PgClient.prototype.query;
  PgClient.prototype.query = function (this: PgClient, ...args: unknown[]) {
    const [first, second] = args as [string | { text?: string; values?: unknown[] }, unknown];
    const sql = typeof first === 'string' ? first : first?.text;
    const params = (typeof first === 'string' ? (Array.isArray(second) ? second : []) : first?.values) ?? [];
    // The list's one statement (readRunPage): the page's rows read from "run" r.
    if (sql && /FROM "run" r WHERE/.test(sql)) captured.push({ sql, params });
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof PgClient.prototype.query;
  try {
    await get();
  } finally {
    PgClient.prototype.query = original;
  }
  if (captured.length !== 1) throw new Error(`expected one run list statement, captured ${captured.length}`);
  const [{ 'QUERY PLAN': plan }] = (await pool.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${captured[0].sql}`, captured[0].params)).rows as Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode; 'Execution Time': number }> }>;
  const top = plan[0].Plan;
  return { ms: plan[0]['Execution Time'], buffers: (top['Shared Hit Blocks'] ?? 0) + (top['Shared Read Blocks'] ?? 0), read: top['Shared Read Blocks'] ?? 0, rows: top['Actual Rows'] ?? 0, shape: shapeOf(pageRead(top) ?? top) };
}
