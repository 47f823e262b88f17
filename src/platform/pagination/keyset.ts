import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { CursorBinding, decodeCursor, encodeCursor, KeyType } from './cursor';
import { DEFAULT_PAGE_LIMIT, Page, PageRequest } from './page-query';
import { WiringFault } from '../errors/internal-fault';

/** One component of a list's sort key: a column expression of the query (`g.created_at`) and its type. */
export interface KeysetColumn {
  column: string;
  type: KeyType;
}

export interface KeysetOptions {
  /** The sort key, most significant first; together unique (end with the primary key). */
  keys: KeysetColumn[];
  /** One direction for the whole key (a row-value comparison cannot mix them). */
  direction: 'ASC' | 'DESC';
  binding: CursorBinding;
}

/** The exact text of a key component as the cursor carries it (timestamps to the microsecond, in UTC). */
function readExpression(k: KeysetColumn): string {
  return k.type === 'timestamptz' ? `to_char(${k.column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')` : `(${k.column})::text`;
}

/** The rows strictly after a cursor's position: `(k0, k1) < (CAST(<p0> AS t0), CAST(<p1> AS t1))`, `placeholder(i)` naming each value. */
function afterPosition(opts: KeysetOptions, placeholder: (i: number) => string): string {
  const rhs = opts.keys.map((k, i) => `CAST(${placeholder(i)} AS ${k.type})`).join(', ');
  return `(${opts.keys.map((k) => k.column).join(', ')}) ${opts.direction === 'ASC' ? '>' : '<'} (${rhs})`;
}

/**
 * Keyset pagination of a TypeORM query the caller has already filtered by tenant (and anything else):
 * orders it by `keys`, continues strictly after the cursor's position, and reads one row more than
 * the page to know whether a next page exists. Rows inserted while a client pages never shift,
 * repeat or hide the rows it has not read yet; they appear on a later page when they sort after the
 * position, and never when they sort before it. The query must not join (one raw row per entity).
 */
export async function keysetPage<T extends ObjectLiteral>(qb: SelectQueryBuilder<T>, page: PageRequest, opts: KeysetOptions): Promise<Page<T>> {
  const limit = page.limit ?? DEFAULT_PAGE_LIMIT;
  const types = opts.keys.map((k) => k.type);
  if (page.cursor !== undefined) {
    const after = decodeCursor(page.cursor, opts.binding, types);
    qb.andWhere(afterPosition(opts, (i) => `:__keyset${i}`), Object.fromEntries(after.map((v, i) => [`__keyset${i}`, v])));
  }
  opts.keys.forEach((k, i) => {
    if (i === 0) qb.orderBy(k.column, opts.direction);
    else qb.addOrderBy(k.column, opts.direction);
    qb.addSelect(readExpression(k), `__keyset_${i}`);
  });
  qb.limit(limit + 1);
  const { entities, raw } = await qb.getRawAndEntities();
  if (entities.length !== raw.length) throw new WiringFault('keysetPage: the query must return one row per entity (no joins)');
  const more = entities.length > limit;
  const items = entities.slice(0, limit);
  return { items, nextCursor: more ? cursorAfter(raw[limit - 1] as Record<string, unknown>, opts) : null };
}

/** The cursor of the position after `row` (its `__keyset_*` items: the sort key as the cursor carries it). */
function cursorAfter(row: Record<string, unknown>, opts: KeysetOptions): string {
  return encodeCursor(opts.binding, opts.keys.map((_, i) => String(row[`__keyset_${i}`])));
}

/** What `keysetSql` adds to a plain SQL statement of a list (see keysetPage for the contract). */
export interface KeysetSql {
  /** The condition after the cursor's position (undefined on a first page): AND it to the statement's own. */
  after?: string;
  /** The select-list items that read the sort key as the cursor carries it (`"__keyset_0"`, …). */
  select: string;
  /** The ORDER BY items. */
  orderBy: string;
  /** The LIMIT's placeholder (a page and one row more). */
  limit: string;
  /** The page's size. */
  pageSize: number;
}

/**
 * Keyset pagination for a plain SQL statement (one a capability writes itself, not a TypeORM query):
 * the same order, cursor and one-row-more read as keysetPage. The values go to `params` (placeholders
 * after the statement's own); `keysetRows` turns the rows read into the page.
 */
export function keysetSql(page: PageRequest, opts: KeysetOptions, params: unknown[]): KeysetSql {
  const pageSize = page.limit ?? DEFAULT_PAGE_LIMIT;
  let after: string | undefined;
  if (page.cursor !== undefined) {
    const first = params.length + 1;
    params.push(...decodeCursor(page.cursor, opts.binding, opts.keys.map((k) => k.type)));
    after = afterPosition(opts, (i) => `$${first + i}`);
  }
  params.push(pageSize + 1);
  return {
    after,
    select: opts.keys.map((k, i) => `${readExpression(k)} AS "__keyset_${i}"`).join(', '),
    orderBy: opts.keys.map((k) => `${k.column} ${opts.direction}`).join(', '),
    limit: `$${params.length}`,
    pageSize,
  };
}

/** The page of the rows a `keysetSql` statement read (in its order; each row keeps its `__keyset_*` items). */
export function keysetRows<T extends object>(rows: T[], sql: KeysetSql, opts: KeysetOptions): Page<T> {
  const items = rows.slice(0, sql.pageSize);
  const last = rows.length > sql.pageSize ? rows[sql.pageSize - 1] : undefined;
  return { items, nextCursor: last ? cursorAfter(last as Record<string, unknown>, opts) : null };
}

/**
 * The same contract over a list computed in memory (merged from several sources, resolved per
 * item...): sorted by a unique string key, continued strictly after the cursor's key.
 */
export function arrayPage<T>(all: readonly T[], keyOf: (item: T) => string, page: PageRequest, binding: CursorBinding): Page<T> {
  const limit = page.limit ?? DEFAULT_PAGE_LIMIT;
  const after = page.cursor !== undefined ? decodeCursor(page.cursor, binding, ['text'])[0] : undefined;
  const sorted = [...all].sort((a, b) => compare(keyOf(a), keyOf(b)));
  const rest = after === undefined ? sorted : sorted.filter((item) => compare(keyOf(item), after) > 0);
  const items = rest.slice(0, limit);
  const nextCursor = rest.length > limit ? encodeCursor(binding, [keyOf(items[items.length - 1])]) : null;
  return { items, nextCursor };
}

/** Code-unit order: the same on every replica, whatever its locale. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
