/**
 * The rows of a raw query's answer, whatever answered it: TypeORM's pg driver answers `[rows, count]`
 * for UPDATE/DELETE ... RETURNING and the rows for INSERT/SELECT; a plain driver answers a result
 * with `rows`. The one copy of this rule: every raw statement's caller reads its answer here.
 */
export function rowsOf<T>(res: unknown): T[] {
  if (Array.isArray(res) && res.length === 2 && Array.isArray(res[0]) && typeof res[1] === 'number') return res[0] as T[];
  if (Array.isArray(res)) return res as T[];
  const rows = (res as { rows?: unknown } | null)?.rows;
  return Array.isArray(rows) ? (rows as T[]) : [];
}
