/**
 * Grows a database to many runs from runs the host really wrote: `templateRuns` finds every table
 * holding rows of the given runs (a column `run_id` or `stream_id` naming them, or the `run` table's
 * own `id`), and `replicate` copies those rows, `copies` times per template run, with INSERT ...
 * SELECT over generate_series. The statements are built from the live table columns (pg_attribute),
 * so a change of a table's shape is followed, not hard-coded:
 *
 * - the run's id (and every column naming it) becomes md5(template id, copy)::uuid, the same in every table;
 * - `tenant` becomes `tenant-<copy mod tenants>`;
 * - any other `uuid` column named `id` gets a fresh gen_random_uuid();
 * - an identity or serial column takes its default;
 * - every timestamp column moves back by the copy's age (copy 1 the oldest, `spreadDays` back);
 * - `status` of about one run in `sparseEvery` (by a hash of its id, in every tenant alike) becomes `failed`
 *   (a sparse status for list filters);
 * - everything else is copied as it is.
 *
 * The rows a run refers to by number (its stored definition and principal, `<name>_key`) are copied to every
 * tenant first, and a copied run refers to its tenant's copy (the row of the same `hash` in that tenant).
 *
 * A table whose rows name their stream by the stream row's generated key (a `stream_key` column,
 * when `event_stream` has a `key`) is found through the template streams' keys, and each copy takes
 * the key its copied stream row was given (the stream rows are copied first).
 */
import type { Pool } from 'pg';
import { InvariantViolation } from '../../src/platform/errors/internal-fault';

export interface TemplateTable {
  table: string;
  /** The column that names the run (`stream_key`: the stream row's key, see above). */
  runColumn: string;
  /** Rows the template runs hold in it. */
  rows: number;
}

interface Column {
  name: string;
  type: string;
  identity: boolean;
}

const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;

async function columns(pool: Pool, table: string): Promise<Column[]> {
  const r = await pool.query(
    `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
            (a.attidentity <> '' OR a.attgenerated <> '' OR coalesce(pg_get_expr(d.adbin, d.adrelid), '') LIKE 'nextval(%') AS identity
     FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [`public.${quote(table)}`],
  );
  return r.rows as Column[];
}

/** The tables holding rows of `runIds` (the run table first, then the others by name), with the column naming the run. */
export async function templateTables(pool: Pool, runIds: string[]): Promise<TemplateTable[]> {
  const candidates = (
    await pool.query(
      `SELECT c.relname AS table, a.attname AS col FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
       WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
         AND ((c.relname = 'run' AND a.attname = 'id') OR (c.relname <> 'run' AND a.attname IN ('run_id', 'stream_id')))
         AND format_type(a.atttypid, a.atttypmod) IN ('uuid', 'text', 'character varying')
       ORDER BY c.relname <> 'run', c.relname`,
    )
  ).rows as Array<{ table: string; col: string }>;
  const out: TemplateTable[] = [];
  for (const { table, col } of candidates) {
    const n = (await pool.query(`SELECT count(*)::int AS n FROM ${quote(table)} WHERE ${quote(col)}::text = ANY($1::text[])`, [runIds])).rows[0].n as number;
    if (n > 0) out.push({ table, runColumn: col, rows: n });
  }
  // Tables keyed by the stream row's key, after the stream rows.
  const streamKey = (await pool.query(`SELECT 1 FROM pg_attribute WHERE attrelid = 'public.event_stream'::regclass AND attname = 'key' AND NOT attisdropped`)).rowCount;
  if (streamKey) {
    const keyed = (
      await pool.query(
        `SELECT c.relname AS table FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
         WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace AND a.attname = 'stream_key' AND NOT a.attisdropped AND c.relname <> 'event_stream' ORDER BY 1`,
      )
    ).rows as Array<{ table: string }>;
    for (const { table } of keyed) {
      const n = (await pool.query(`SELECT count(*)::int AS n FROM ${quote(table)} r JOIN "event_stream" ts ON ts."key" = r."stream_key" WHERE ts."stream_id" = ANY($1::text[])`, [runIds])).rows[0].n as number;
      if (n > 0) out.push({ table, runColumn: 'stream_key', rows: n });
    }
  }
  if (out[0]?.table !== 'run') throw new InvariantViolation('growth seed: the template runs are not in the run table');
  return out;
}

/**
 * The INSERT ... SELECT that writes copies `from`..`to` of the template runs' rows of one table.
 * $1: the template run ids (text[]), $2/$3: the first and last copy, $4: tenants, $5: seconds between
 * copies, $6: one copy in how many is `failed`, $7: copies in all (copy 1 the oldest).
 */
export async function copyStatement(pool: Pool, t: TemplateTable): Promise<string> {
  const keyed = t.runColumn === 'stream_key';
  const cols = (await columns(pool, t.table)).filter((c) => !c.identity);
  const exprs = cols.map((c) => {
    const col = `r.${quote(c.name)}`;
    if (keyed && c.name === 'stream_key') return 'ns."key"';
    if (c.name === t.runColumn || (c.name === 'run_id' && t.table !== 'run')) return `md5(${col}::text || ':' || g)::uuid::${c.type}`;
    // A row that keeps no tenant (an event other than a tool call) keeps none in its copies.
    if (c.name === 'tenant') return `CASE WHEN ${col} IS NOT NULL THEN ('tenant-' || (g % $4::int))::${c.type} END`;
    if (c.name === 'id' && c.type === 'uuid') return 'gen_random_uuid()';
    if (c.type.startsWith('timestamp')) return `${col} - make_interval(secs => ($7::int + 1 - g) * $5::float8)`;
    // A reference (see copyReferencedRows): the key of the referenced row's copy in the copy's tenant, found by its hash.
    if (t.table === 'run' && c.type === 'bigint' && c.name.endsWith('_key')) {
      const ref = quote(`run_${c.name.slice(0, -4)}`);
      return `(SELECT y."key" FROM ${ref} y JOIN ${ref} x ON x."key" = ${col} WHERE y."tenant" = 'tenant-' || (g % $4::int) AND y."hash" = x."hash")`;
    }
    if (c.name === 'status' && t.table === 'run') return `CASE WHEN abs(hashtext(md5(${quote('r')}.${quote(t.runColumn)}::text || ':' || g))) % $6::int = 0 THEN 'failed' ELSE ${col} END`;
    return col;
  });
  const params = `$4::int + $6::int + $7::int > 0 AND $5::float8 >= 0`;
  if (keyed) {
    return `INSERT INTO ${quote(t.table)} (${cols.map((c) => quote(c.name)).join(', ')})
    SELECT ${exprs.join(', ')} FROM ${quote(t.table)} r JOIN "event_stream" ts ON ts."key" = r."stream_key" CROSS JOIN generate_series($2::int, $3::int) AS g
    JOIN "event_stream" ns ON ns."tenant" = 'tenant-' || (g % $4::int) AND ns."stream_id" = md5(ts."stream_id" || ':' || g)::uuid::text
    WHERE ts."stream_id" = ANY($1::text[]) AND ${params}`;
  }
  return `INSERT INTO ${quote(t.table)} (${cols.map((c) => quote(c.name)).join(', ')})
    SELECT ${exprs.join(', ')} FROM ${quote(t.table)} r CROSS JOIN generate_series($2::int, $3::int) AS g
    WHERE r.${quote(t.runColumn)}::text = ANY($1::text[]) AND ${params}`;
}

export interface SeedOptions {
  /** Copies of each template run. */
  copies: number;
  tenants: number;
  /** The copies spread over this many days before the template runs (newest copy 1 s before). */
  spreadDays: number;
  sparseEvery: number;
  /** Copies per statement. */
  chunk?: number;
  progress?: (copiesDone: number) => void;
}

/**
 * The rows a run names by number instead of holding them: a `bigint` column `<name>_key` of the run
 * table names a row of the table `run_<name>` by its `key` (the stored workflow definition, the stored
 * principal; each row is (`tenant`, `hash`) unique). A copy's run gets another tenant, so each such row
 * of the template runs is copied to every tenant first (once, whatever the number of copies), with a
 * key of its own; the run copies then refer to their tenant's copy (copyStatement).
 */
async function copyReferencedRows(pool: Pool, runIds: string[], tenants: number): Promise<void> {
  const refs = (
    await pool.query(
      `SELECT a.attname AS "column", 'run_' || left(a.attname, -4) AS "table" FROM pg_attribute a
       WHERE a.attrelid = 'public.run'::regclass AND a.attname LIKE '%\\_key' AND a.atttypid = 'bigint'::regtype AND NOT a.attisdropped
         AND EXISTS (SELECT 1 FROM pg_class c WHERE c.relname = 'run_' || left(a.attname, -4) AND c.relnamespace = 'public'::regnamespace)`,
    )
  ).rows as Array<{ column: string; table: string }>;
  for (const ref of refs) {
    const cols = (await columns(pool, ref.table)).filter((c) => !c.identity).map((c) => c.name);
    if (!cols.includes('tenant') || !cols.includes('hash')) continue;
    const exprs = cols.map((c) => (c === 'tenant' ? `'tenant-' || g` : `x.${quote(c)}`));
    await pool.query(
      `INSERT INTO ${quote(ref.table)} (${cols.map(quote).join(', ')})
       SELECT ${exprs.join(', ')} FROM ${quote(ref.table)} x CROSS JOIN generate_series(0, $2::int - 1) AS g
       WHERE x."key" IN (SELECT ${quote(ref.column)} FROM "run" WHERE "id" = ANY($1::uuid[]))
       ON CONFLICT DO NOTHING`,
      [runIds, tenants],
    );
  }
}

/** Writes `copies` copies of each template run, chunk by chunk, every table of a chunk in one transaction. */
export async function replicate(pool: Pool, runIds: string[], o: SeedOptions): Promise<TemplateTable[]> {
  const tables = await templateTables(pool, runIds);
  await copyReferencedRows(pool, runIds, o.tenants);
  const statements = await Promise.all(tables.map((t) => copyStatement(pool, t)));
  const step = (o.spreadDays * 86_400) / o.copies;
  const chunk = o.chunk ?? Math.max(1, Math.floor(50_000 / runIds.length));
  for (let from = 1; from <= o.copies; from += chunk) {
    const to = Math.min(o.copies, from + chunk - 1);
    const c = await pool.connect();
    try {
      await c.query('BEGIN');
      for (const sql of statements) await c.query(sql, [runIds, from, to, o.tenants, step, o.sparseEvery, o.copies]);
      await c.query('COMMIT');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      c.release();
    }
    o.progress?.(to);
  }
  return tables;
}
