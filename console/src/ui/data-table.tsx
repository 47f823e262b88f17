import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from '../api/client';
import type { Page } from '../api/paging';
import { ErrorBanner } from './errors';
import { asApiError, Loaded } from './hooks';
import { Loading } from './controls';

/** What a list shows: its items (undefined until first loaded), whether it is loading, its error, and paging. */
export interface ListSource<T> {
  items: T[] | undefined;
  loading: boolean;
  error: ApiError | null;
  hasMore?: boolean;
  loadMore?: () => void;
}

export interface PagedList<T> extends ListSource<T> {
  reload: () => void;
}

/**
 * A cursor-paged list of the host: the first page whenever the dependencies change (or `reload`), then
 * "Load more" with the host's `nextCursor`. A new first page drops any "Load more" answer still under
 * way for the previous one; the items seen stay on screen while a reload is in flight.
 */
export function usePagedList<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>, deps: unknown[], key: (item: T) => string): PagedList<T> {
  const [items, setItems] = useState<T[] | undefined>(undefined);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<ApiError | null>(null);
  const [tick, setTick] = useState(0);
  const generation = useRef(0);
  useEffect(() => {
    const asked = ++generation.current;
    setLoading(true);
    fetchPage(undefined).then(
      (page) => {
        if (asked !== generation.current) return;
        setItems(page.items);
        setNextCursor(page.nextCursor);
        setError(null);
        setLoading(false);
      },
      (e: unknown) => {
        if (asked !== generation.current) return;
        setError(asApiError(e));
        setLoading(false);
      },
    );
  }, [...deps, tick]);
  const loadMore = useCallback(() => {
    if (!nextCursor) return;
    const asked = generation.current;
    setLoading(true);
    fetchPage(nextCursor).then(
      (page) => {
        if (asked !== generation.current) return;
        setItems((list) => {
          const seen = new Set((list ?? []).map(key));
          return [...(list ?? []), ...page.items.filter((i) => !seen.has(key(i)))];
        });
        setNextCursor(page.nextCursor);
        setError(null);
        setLoading(false);
      },
      (e: unknown) => {
        if (asked !== generation.current) return;
        setError(asApiError(e));
        setLoading(false);
      },
    );
  }, [nextCursor, ...deps]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { items, loading, error, hasMore: Boolean(nextCursor), loadMore, reload };
}

/** A list loaded whole (no paging) as a list source. */
export function loadedList<T>(loaded: Loaded<T[]>): ListSource<T> {
  return { items: loaded.data, loading: loaded.loading, error: loaded.error };
}

export interface Column<T> {
  header: string;
  cell: (row: T) => ComponentChildren;
  class?: string;
}

export interface DataTableProps<T> {
  list: ListSource<T>;
  /** Columns; a false/null entry is left out (a column shown only with some scope). */
  columns: Array<Column<T> | false | null | undefined>;
  rowKey: (row: T) => string;
  /** The table's caption (read by screen readers; shown when `captionShown`). */
  caption: string;
  captionShown?: boolean;
  /** Singular and plural of what the list holds, for the loading, empty and count lines. */
  noun: [string, string];
  /** Shown when the list is loaded and empty (default "No <noun>."). */
  empty?: string;
  /** Replaces the count line ("3 runs shown, more on the host"); null hides it. */
  status?: string | null;
  selected?: string | null;
  /** Filter controls, shown above the list in a form labelled "Filter <nouns>". */
  filters?: ComponentChildren;
  search?: boolean;
}

/**
 * The one list of the console: filters, the error of the last load, a loading line on first load, an empty
 * line, the table, a count line (announced as it changes) and "Load more" while the host has more.
 */
export function DataTable<T>(p: DataTableProps<T>) {
  const { list } = p;
  const columns = p.columns.filter((c): c is Column<T> => Boolean(c));
  const n = list.items?.length ?? 0;
  const status =
    p.status !== undefined ? p.status : list.items ? `${n} ${n === 1 ? p.noun[0] : p.noun[1]} shown${list.hasMore ? ', more on the host' : ''}` : '';
  return (
    <div class="data-list">
      {p.filters ? (
        <form class="filters" role={p.search ? 'search' : undefined} aria-label={`Filter ${p.noun[1]}`} onSubmit={(e) => e.preventDefault()}>
          {p.filters}
        </form>
      ) : null}
      <ErrorBanner error={list.error} />
      {list.loading && !list.items ? <Loading what={p.noun[1]} /> : null}
      {list.items && n === 0 && !list.loading ? <p class="muted">{p.empty ?? `No ${p.noun[0]}.`}</p> : null}
      {n ? (
        // A table wider than its card scrolls inside it (the page never does).
        <div class="table-scroll">
        <table class="list">
          <caption class={p.captionShown ? undefined : 'sr-only'}>{p.caption}</caption>
          <thead>
            <tr>
              {columns.map((c) => (
                <th scope="col" key={c.header}>
                  {c.header}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {list.items!.map((row) => {
              const k = p.rowKey(row);
              return (
                <tr key={k} class={p.selected === k ? 'selected' : ''} aria-current={p.selected === k ? 'true' : undefined}>
                  {columns.map((c) => (
                    <td key={c.header} class={c.class}>
                      {c.cell(row)}
                    </td>
                  ))}
                </tr>
              );
            })}
          </tbody>
        </table>
        </div>
      ) : null}
      {status !== null ? (
        <p class="muted" role="status">
          {status}
        </p>
      ) : null}
      {list.hasMore && list.loadMore ? (
        <button type="button" disabled={list.loading} onClick={list.loadMore}>
          Load more
        </button>
      ) : null}
    </div>
  );
}
