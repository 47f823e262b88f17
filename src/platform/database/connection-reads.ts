import type { EntityManager } from 'typeorm';

/**
 * `read` for each item, in order. Inside a caller's transaction (`m` holds its query runner) the reads
 * share its one connection, so they run one at a time: pg queues a query sent while another is in
 * flight, a use it deprecates and pg 9 refuses. Outside one (the pool, or no manager) they run together.
 */
export async function readEach<T, R>(m: EntityManager | undefined, items: readonly T[], read: (item: T) => Promise<R>): Promise<R[]> {
  if (!m?.queryRunner) return Promise.all(items.map(read));
  const out: R[] = [];
  for (const item of items) out.push(await read(item));
  return out;
}
