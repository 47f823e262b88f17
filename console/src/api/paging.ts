/** One page of a host list: its items and the cursor of the next page (null on the last page). */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** Items per page the console asks for (the host's default is 100, its maximum 500). */
export const PAGE_SIZE = 25;

/** The paging query of a list route: `limit`, and `cursor` from the second page on. */
export function pageQuery(cursor: string | undefined, limit = PAGE_SIZE): { limit: number; cursor?: string } {
  return cursor ? { limit, cursor } : { limit };
}
