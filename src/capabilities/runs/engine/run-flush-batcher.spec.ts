import { DATABASE_UNAVAILABLE } from '../../../platform/database/database-driver';
import { FlushBatcher } from './run-flush-batcher';
import type { FlushParams, FlushResult } from './run-store';

const flush = (runId: string): FlushParams => ({ runId, owner: 'o', fence: 1, tenant: 't', workspace: null, leaseMs: 1000, nodeExecutions: 0, costUsd: 0, update: {}, writes: [], events: [], eventIds: [] });
const ok: FlushResult = { fenced: true, cancel: false, pause: null };

/** A statement sender that holds each statement until released, recording the batches. */
function sender() {
  const batches: string[][] = [];
  const pending: Array<{ fs: FlushParams[]; resolve(r: FlushResult[]): void; reject(e: unknown): void }> = [];
  const send = (fs: FlushParams[]) =>
    new Promise<FlushResult[]>((resolve, reject) => {
      batches.push(fs.map((f) => f.runId));
      pending.push({ fs, resolve, reject });
    });
  // Two turns: the one in which a settled statement schedules the next, and the one that sends it.
  const settle = async () => {
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
  };
  return { batches, pending, send, settle };
}

describe('FlushBatcher (group commit of the engine writes)', () => {
  it('sends a lone flush at once, and what arrives while the statements are out leaves together', async () => {
    const s = sender();
    const b = new FlushBatcher(s.send, { maxInFlight: 1, maxBatch: 64 });
    const first = b.flush(flush('a'));
    await s.settle();
    expect(s.batches).toEqual([['a']]);
    const more = ['b', 'c', 'd'].map((id) => b.flush(flush(id)));
    await s.settle();
    expect(s.batches).toHaveLength(1);
    s.pending.shift()!.resolve([ok]);
    await expect(first).resolves.toEqual(ok);
    await s.settle();
    expect(s.batches[1]).toEqual(['b', 'c', 'd']);
    s.pending.shift()!.resolve([ok, { fenced: false, cancel: null, pause: null }, ok]);
    await expect(Promise.all(more)).resolves.toEqual([ok, { fenced: false, cancel: null, pause: null }, ok]);
  });

  it('sends what waits together, a run at most once per statement (its second flush in the next one)', async () => {
    const s = sender();
    const b = new FlushBatcher(s.send, { maxInFlight: 2, maxBatch: 64 });
    const all = ['a', 'b', 'c', 'd', 'a'].map((id) => b.flush(flush(id)));
    await s.settle();
    expect(s.batches).toEqual([['a', 'b', 'c', 'd'], ['a']]);
    for (const p of s.pending.splice(0)) p.resolve(p.fs.map(() => ok));
    await expect(Promise.all(all)).resolves.toHaveLength(5);
  });

  it('never puts more than maxBatch flushes in one statement', async () => {
    const s = sender();
    const b = new FlushBatcher(s.send, { maxInFlight: 1, maxBatch: 2 });
    const all = ['a', 'b', 'c', 'd', 'e'].map((id) => b.flush(flush(id)));
    for (let i = 0; i < 3; i++) {
      await s.settle();
      const p = s.pending.shift()!;
      p.resolve(p.fs.map(() => ok));
    }
    await Promise.all(all);
    expect(s.batches).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
  });

  it('a statement failing for a reason of its own is retried flush by flush: only the offending run gets the error', async () => {
    const boom = new Error('a node of this run was already completed');
    const sent: string[][] = [];
    const b = new FlushBatcher(
      async (fs) => {
        sent.push(fs.map((f) => f.runId));
        if (fs.some((f) => f.runId === 'bad')) throw boom;
        return fs.map(() => ok);
      },
      { maxInFlight: 1, maxBatch: 64 },
    );
    await b.flush(flush('x'));
    const [good, bad, other] = ['good', 'bad', 'other'].map((id) => b.flush(flush(id)));
    await expect(good).resolves.toEqual(ok);
    await expect(bad).rejects.toBe(boom);
    await expect(other).resolves.toEqual(ok);
    expect(sent[1]).toEqual(['good', 'bad', 'other']);
    expect(sent.slice(2).sort()).toEqual([['bad'], ['good'], ['other']]);
  });

  it('while the database is away every flush of the batch gets the error (each writer retries on its own)', async () => {
    const away = Object.assign(new Error('connection refused'), { [DATABASE_UNAVAILABLE]: true });
    let calls = 0;
    const b = new FlushBatcher(
      async () => {
        calls++;
        throw away;
      },
      { maxInFlight: 1, maxBatch: 64 },
    );
    const all = ['a', 'b'].map((id) => b.flush(flush(id)).catch((e: unknown) => e));
    expect(await Promise.all(all)).toEqual([away, away]);
    expect(calls).toBe(1);
  });
});

describe('FlushBatcher: urgent flushes', () => {
  it('sends an urgent flush at once in a statement of its own (claiming nothing), beside the statements out and ahead of what waits', async () => {
    const s = sender();
    const alone: boolean[] = [];
    const send = (fs: FlushParams[], a: boolean) => (alone.push(a), s.send(fs));
    const b = new FlushBatcher(send, { maxInFlight: 1, maxBatch: 64, urgent: (f) => f.runId.startsWith('new') });
    const first = b.flush(flush('a'));
    await s.settle();
    const waiting = ['b', 'c'].map((id) => b.flush(flush(id)));
    const urgent = b.flush(flush('new1'));
    await s.settle();
    // The statement of `a` is out, `b` and `c` wait for it; `new1` did not.
    expect(s.batches).toEqual([['a'], ['new1']]);
    expect(alone).toEqual([false, true]);
    s.pending[1].resolve([ok]);
    await expect(urgent).resolves.toEqual(ok);
    s.pending[0].resolve([ok]);
    await first;
    await s.settle();
    expect(s.batches[2]).toEqual(['b', 'c']);
    s.pending[2].resolve([ok, ok]);
    await expect(Promise.all(waiting)).resolves.toHaveLength(2);
  });
});
