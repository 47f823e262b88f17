import type { EntityManager } from 'typeorm';
import { readEach } from './connection-reads';

/** A read that notes how many reads were in flight at once. */
function tracker() {
  let inFlight = 0;
  let most = 0;
  return {
    read: async (n: number) => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return n * 2;
    },
    most: () => most,
  };
}

describe('readEach', () => {
  it('inside a transaction (a manager with a query runner) reads one at a time, in order', async () => {
    const t = tracker();
    expect(await readEach({ queryRunner: {} } as EntityManager, [1, 2, 3], t.read)).toEqual([2, 4, 6]);
    expect(t.most()).toBe(1);
  });

  it('outside one (the pool, or no manager) reads together, answers in order', async () => {
    for (const m of [undefined, {} as EntityManager]) {
      const t = tracker();
      expect(await readEach(m, [1, 2, 3], t.read)).toEqual([2, 4, 6]);
      expect(t.most()).toBe(3);
    }
  });
});
