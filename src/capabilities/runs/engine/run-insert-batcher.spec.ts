import { DATABASE_UNAVAILABLE } from '../../../platform/database/database-driver';
import { InsertBatcher } from './run-insert-batcher';

/** A sender that holds each statement until released, recording what each statement carried. */
function sender(opts: { failMany?: unknown; failOne?: (item: string) => unknown; leaveWhenIdle?: boolean } = {}) {
  const statements: Array<{ kind: 'one' | 'many'; items: string[] }> = [];
  const held: Array<() => void> = [];
  const hold = <T>(value: () => T): Promise<T> => new Promise<T>((resolve, reject) => held.push(() => {
    try {
      resolve(value());
    } catch (e) {
      reject(e);
    }
  }));
  const batcher = new InsertBatcher<string, string>(
    (items) => {
      statements.push({ kind: 'many', items });
      return hold(() => {
        if (opts.failMany) throw opts.failMany;
        return items.map((i) => `many:${i}`);
      });
    },
    (item) => {
      statements.push({ kind: 'one', items: [item] });
      return hold(() => {
        const e = opts.failOne?.(item);
        if (e) throw e;
        return `one:${item}`;
      });
    },
    { maxInFlight: 1, maxBatch: 3, leaveWhenIdle: opts.leaveWhenIdle },
  );
  const release = async () => {
    await new Promise((r) => setImmediate(r));
    while (held.length) held.shift()!();
    await new Promise((r) => setImmediate(r));
  };
  return { batcher, statements, release };
}

describe('InsertBatcher', () => {
  it('sends a lone insert at once (in the same turn), in the statement it would have alone', async () => {
    const s = sender();
    const a = s.batcher.submit('a');
    expect(s.statements).toEqual([{ kind: 'one', items: ['a'] }]);
    await s.release();
    await expect(a).resolves.toBe('one:a');
    expect(s.statements).toEqual([{ kind: 'one', items: ['a'] }]);
  });

  it('gathers the inserts that arrive while a statement is out into one, up to maxBatch, each answered in its order', async () => {
    const s = sender();
    const all = ['a', 'b', 'c', 'd', 'e'].map((x, i) => (i === 0 ? s.batcher.submit(x) : undefined));
    await new Promise((r) => setImmediate(r));
    // 'a' is out: the rest wait for it.
    const rest = ['b', 'c', 'd', 'e'].map((x) => s.batcher.submit(x));
    for (let i = 0; i < 4; i++) await s.release();
    await expect(Promise.all([all[0]!, ...rest])).resolves.toEqual(['one:a', 'many:b', 'many:c', 'many:d', 'one:e']);
    expect(s.statements).toEqual([
      { kind: 'one', items: ['a'] },
      { kind: 'many', items: ['b', 'c', 'd'] },
      { kind: 'one', items: ['e'] },
    ]);
  });

  it('sends a failed batch again run by run, so only the offending insert sees the error', async () => {
    const boom = new Error('invalid byte sequence');
    const s = sender({ failMany: boom, failOne: (i) => (i === 'c' ? boom : undefined) });
    const first = s.batcher.submit('a');
    await new Promise((r) => setImmediate(r));
    const rest = ['b', 'c', 'd'].map((x) => s.batcher.submit(x).catch((e: unknown) => e));
    for (let i = 0; i < 4; i++) await s.release();
    expect(await first).toBe('one:a');
    expect(await Promise.all(rest)).toEqual(['one:b', boom, 'one:d']);
  });

  it('hands every insert of a batch the error while the database is away (nothing is sent again)', async () => {
    const away = Object.assign(new Error('connection refused'), { [DATABASE_UNAVAILABLE]: true });
    const s = sender({ failMany: away });
    const first = s.batcher.submit('a');
    await new Promise((r) => setImmediate(r));
    const rest = ['b', 'c'].map((x) => s.batcher.submit(x).catch((e: unknown) => e));
    for (let i = 0; i < 3; i++) await s.release();
    expect(await first).toBe('one:a');
    expect(await Promise.all(rest)).toEqual([away, away]);
    expect(s.statements.filter((x) => x.kind === 'one').map((x) => x.items[0])).toEqual(['a']);
  });

  describe('with leaveWhenIdle off (a database on the host\'s own thread: the embedded engine)', () => {
    it('holds even a lone insert of an idle replica to the end of the turn, then sends it in the statement it would have alone', async () => {
      const s = sender({ leaveWhenIdle: false });
      const a = s.batcher.submit('a');
      expect(s.statements).toEqual([]);
      await s.release();
      await expect(a).resolves.toBe('one:a');
      expect(s.statements).toEqual([{ kind: 'one', items: ['a'] }]);
    });

    it('sends the inserts of one turn together although nothing was out when the first arrived', async () => {
      const s = sender({ leaveWhenIdle: false });
      const all = ['a', 'b', 'c'].map((x) => s.batcher.submit(x));
      await s.release();
      await expect(Promise.all(all)).resolves.toEqual(['many:a', 'many:b', 'many:c']);
      expect(s.statements).toEqual([{ kind: 'many', items: ['a', 'b', 'c'] }]);
    });
  });
});
