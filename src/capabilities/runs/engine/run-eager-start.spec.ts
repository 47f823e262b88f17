import { EagerStart, EagerStartAbandoned, RunNotInserted } from './run-eager-start';
import { LeaseLost } from './run-writer';
import { FlushParams, FlushResult, RunStore, runLeaseStore } from './run-store';
import type { DataSource } from 'typeorm';

const flush = (runId = 'r1'): FlushParams => ({ runId, owner: 'o', fence: 1, tenant: 't', workspace: null, leaseMs: 1000, nodeExecutions: 0, costUsd: 0, update: {}, writes: [], events: [], eventIds: [] });

function baseStore(): RunStore & { flushed: FlushParams[] } {
  const flushed: FlushParams[] = [];
  return {
    flushed,
    flush: async (f) => {
      flushed.push(f);
      return { fenced: true, cancel: false, pause: null };
    },
    eventExists: async () => true,
    loadNodes: async () => [],
    recordedOutcomes: async () => new Map(),
    transaction: async (work) => work({} as never),
  };
}

describe('EagerStart (a run started before its insert)', () => {
  const written: FlushResult = { fenced: true, cancel: false, pause: null };

  it('sends its first write as the insert and every later one to the engine store', async () => {
    const base = baseStore();
    const inserts: FlushParams[] = [];
    const eager = new EagerStart(base, async (f) => {
      inserts.push(f);
      return { current: true, inserted: true, result: written };
    });
    expect([eager.sent, eager.written]).toEqual([false, false]);
    await expect(eager.transaction(async () => 1)).rejects.toBeInstanceOf(RunNotInserted);
    expect(await eager.flush(flush())).toBe(written);
    expect(await eager.inserted).toEqual({ current: true, inserted: true, result: written });
    expect([eager.sent, eager.written]).toEqual([true, true]);
    await eager.flush(flush());
    expect([inserts.length, base.flushed.length]).toEqual([1, 1]);
    expect(await eager.transaction(async () => 1)).toBe(1);
    eager.ended();
    await eager.over;
    await expect(eager.inserted).resolves.toMatchObject({ inserted: true });
  });

  it('stops the execution as a lost lease when the insert is refused (a taken key, moved chains) and answers why', async () => {
    for (const outcome of [{ current: true, inserted: false }, { current: false, inserted: false }]) {
      const base = baseStore();
      const eager = new EagerStart(base, async () => outcome);
      const err = await eager.flush(flush()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RunNotInserted);
      expect(err).toBeInstanceOf(LeaseLost);
      expect(await eager.inserted).toEqual(outcome);
      // Whatever the execution tries next is refused too; nothing reaches the engine store.
      await expect(eager.flush(flush())).rejects.toBeInstanceOf(RunNotInserted);
      expect(base.flushed).toHaveLength(0);
    }
  });

  it('hands the insert\'s error to the creation, not to the execution (which stops without retrying)', async () => {
    const boom = new Error('connection terminated');
    const eager = new EagerStart(baseStore(), async () => {
      throw boom;
    });
    await expect(eager.flush(flush())).rejects.toBeInstanceOf(RunNotInserted);
    await expect(eager.inserted).rejects.toBe(boom);
  });

  it('answers an execution that ended without writing as abandoned (the run is inserted the usual way)', async () => {
    const eager = new EagerStart(baseStore(), async () => ({ current: true, inserted: true, result: written }));
    eager.ended();
    await expect(eager.inserted).rejects.toBeInstanceOf(EagerStartAbandoned);
    await expect(eager.flush(flush())).rejects.toBeInstanceOf(RunNotInserted);
  });
});

describe('runLeaseStore with runs not inserted yet', () => {
  it('holds a run whose insert is not written without asking the database (its insert writes the lease)', async () => {
    const ds = { query: () => Promise.reject(new Error('no statement expected')) } as unknown as DataSource;
    const store = runLeaseStore(ds, (runId) => (runId === 'unwritten' ? null : undefined));
    const held = await store.renew('owner', ['unwritten', 'gone'], 1000);
    expect([...held.entries()]).toEqual([['unwritten', { cancelRequested: false, pause: null }]]);
  });
});
