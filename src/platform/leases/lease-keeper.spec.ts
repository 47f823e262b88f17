import { LeaseEndedError, LeaseKeeper, LeaseStore } from './lease-keeper';
import { leaseOwnerId } from './lease-owner';

/** A store whose rows live in a map; `renew` answers what the test decides. */
class FakeStore<T = void> implements LeaseStore<string, T> {
  readonly renewCalls: Array<{ owner: string; keys: string[]; leaseMs: number }> = [];
  readonly releaseCalls: Array<{ owner: string; keys: string[] }> = [];
  /** Keys the store no longer grants to the keeper (another owner took them). */
  readonly taken = new Set<string>();
  fail?: Error;
  /** When set, renew waits for it (a renewal in flight). */
  gate?: Promise<void>;
  info: (key: string) => T = () => undefined as T;

  async renew(owner: string, keys: string[], leaseMs: number): Promise<Map<string, T>> {
    this.renewCalls.push({ owner, keys: [...keys], leaseMs });
    if (this.gate) await this.gate;
    if (this.fail) throw this.fail;
    return new Map(keys.filter((k) => !this.taken.has(k)).map((k) => [k, this.info(k)]));
  }

  async release(owner: string, keys: string[]): Promise<void> {
    this.releaseCalls.push({ owner, keys: [...keys] });
  }
}

const LEASE = 3000;
// leaseMs / 10 = 300 ms under 5 s: the lease is given up at 2700 ms.
const MARGIN = 300;

/** Runs due timers and lets the promises they started settle. */
async function advance(ms: number): Promise<void> {
  await jest.advanceTimersByTimeAsync(ms);
}

describe('leaseOwnerId', () => {
  it('is the instance id and a uuid, new each time', () => {
    const a = leaseOwnerId('replica-a');
    expect(a).toMatch(/^replica-a:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(leaseOwnerId('replica-a')).not.toBe(a);
  });
});

describe('LeaseKeeper', () => {
  let store: FakeStore<{ n: number }>;
  let warnings: Array<{ obj: object; msg: string }>;
  const keeper = (over: Partial<ConstructorParameters<typeof LeaseKeeper<string, { n: number }>>[0]> = {}) =>
    new LeaseKeeper<string, { n: number }>({ owner: 'host-1:x', leaseMs: LEASE, store, log: { warn: (obj) => warnings.push({ obj, msg: obj.msg }) }, ...over });

  beforeEach(() => {
    jest.useFakeTimers();
    store = new FakeStore();
    warnings = [];
  });
  afterEach(() => jest.useRealTimers());

  it('renews every held key in one call every renewEveryMs (leaseMs / 3 by default) and hands each its renewal info', async () => {
    let n = 0;
    store.info = () => ({ n: ++n });
    const k = keeper();
    const seen: Array<[string, number]> = [];
    const a = k.hold('a', { onRenewed: (i) => seen.push(['a', i.n]) });
    const b = k.hold('b', { onRenewed: (i) => seen.push(['b', i.n]) });
    expect(k.owner).toBe('host-1:x');
    expect(k.size).toBe(2);
    await advance(999);
    expect(store.renewCalls).toHaveLength(0);
    await advance(1);
    expect(store.renewCalls).toEqual([{ owner: 'host-1:x', keys: ['a', 'b'], leaseMs: LEASE }]);
    expect(seen).toEqual([['a', 1], ['b', 2]]);
    // Renewed for as long as it is held, far past the first lease.
    await advance(10 * LEASE);
    expect(store.renewCalls).toHaveLength(31);
    expect(a.signal.aborted).toBe(false);
    expect(b.reason).toBeUndefined();
    await k.stop();
  });

  it('keeps one timer however many keys it holds', async () => {
    const k = keeper();
    for (const key of ['a', 'b', 'c', 'd']) k.hold(key);
    k.hold('e', { renew: false });
    expect(jest.getTimerCount()).toBe(1);
    await advance(1000);
    expect(jest.getTimerCount()).toBe(1);
    await k.stop();
    expect(jest.getTimerCount()).toBe(0);
  });

  it('aborts a key the renewal did not return (lost), and only that one', async () => {
    const k = keeper();
    const a = k.hold('a');
    const b = k.hold('b');
    store.taken.add('a');
    await advance(1000);
    expect(a.signal.aborted).toBe(true);
    expect(a.reason).toBe('lost');
    expect(a.signal.reason).toBeInstanceOf(LeaseEndedError);
    expect(a.signal.reason).toMatchObject({ key: 'a', reason: 'lost' });
    expect(b.signal.aborted).toBe(false);
    expect(k.size).toBe(1);
    await advance(1000);
    expect(store.renewCalls[1].keys).toEqual(['b']);
    await k.stop();
  });

  it('keeps its leases through failing renewals until their own expiry passes, then aborts them (expired)', async () => {
    const k = keeper();
    const a = k.hold('a');
    await advance(1000); // renewed at 1000: held until 1000 + 3000 - margin = 3700
    store.fail = new Error('connection refused');
    await advance(2000); // renewals at 2000 and 3000 fail
    expect(store.renewCalls).toHaveLength(3);
    expect(warnings.map((w) => w.msg)).toEqual(['lease renewal failed; the leases are kept until they expire', 'lease renewal failed; the leases are kept until they expire']);
    expect(a.signal.aborted).toBe(false);
    await advance(1000 + 3000 - MARGIN - 3000 - 1);
    expect(a.signal.aborted).toBe(false);
    await advance(1);
    expect(a.reason).toBe('expired');
    expect(k.size).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('counts the expiry from claimedAtMs, not from hold()', async () => {
    const k = keeper();
    store.fail = new Error('down');
    const a = k.hold('a', { claimedAtMs: Date.now() - 1000 });
    await advance(LEASE - MARGIN - 1000 - 1);
    expect(a.signal.aborted).toBe(false);
    await advance(1);
    expect(a.reason).toBe('expired');
  });

  it('never overlaps a renewal in flight, and expires leases whose renewal hangs', async () => {
    const k = keeper();
    let open!: () => void;
    store.gate = new Promise((r) => (open = r));
    const a = k.hold('a');
    // Wakes the keeper's timer at 2200, past the next renewal's time, while the one sent at 1000 is in flight.
    const early = k.hold('early', { renew: false, claimedAtMs: Date.now() - 500 });
    await advance(1000);
    expect(store.renewCalls).toHaveLength(1);
    await advance(1500);
    expect(early.reason).toBe('expired');
    expect(store.renewCalls).toHaveLength(1);
    await advance(LEASE - MARGIN - 2500);
    expect(a.reason).toBe('expired');
    expect(store.renewCalls).toHaveLength(1);
    // The hung renewal's late answer does not bring the lease back.
    open();
    await advance(0);
    expect(a.reason).toBe('expired');
    expect(k.size).toBe(0);
  });

  it('does not treat a key held while a renewal was in flight as lost by that renewal', async () => {
    const k = keeper();
    let open!: () => void;
    store.gate = new Promise((r) => (open = r));
    const a = k.hold('a');
    await advance(1000);
    expect(store.renewCalls[0].keys).toEqual(['a']);
    const b = k.hold('b');
    store.gate = undefined;
    open();
    await advance(0);
    expect(b.signal.aborted).toBe(false);
    expect(a.signal.aborted).toBe(false);
    // A renewal in flight when the next one was due: the next starts as soon as it returns.
    expect(store.renewCalls).toHaveLength(1);
    await advance(1000);
    expect(store.renewCalls[1].keys).toEqual(['a', 'b']);
    await k.stop();
  });

  it('does not end a key dropped and held again while a renewal was in flight (the answer was for the old hold)', async () => {
    const k = keeper();
    let open!: () => void;
    store.gate = new Promise((r) => (open = r));
    const first = k.hold('a');
    await advance(1000);
    await first.drop();
    const second = k.hold('a');
    store.taken.add('a');
    open();
    await advance(0);
    expect(first.reason).toBe('released');
    expect(second.signal.aborted).toBe(false);
    await k.stop();
  });

  it('watches a never-renewed lease (renew: false): never sent to the store, aborted at its expiry less the margin', async () => {
    const k = keeper();
    const claimedAtMs = Date.now();
    const pass = k.hold('pass', { renew: false, claimedAtMs });
    const kept = k.hold('kept');
    await advance(LEASE - MARGIN - 1);
    expect(pass.signal.aborted).toBe(false);
    expect(store.renewCalls.every((c) => !c.keys.includes('pass'))).toBe(true);
    await advance(1);
    expect(pass.reason).toBe('expired');
    expect(kept.signal.aborted).toBe(false);
    await k.stop();
  });

  it('a keeper of never-renewed leases never calls the store', async () => {
    const k = keeper();
    k.hold('p1', { renew: false });
    k.hold('p2', { renew: false });
    await advance(2 * LEASE);
    expect(store.renewCalls).toHaveLength(0);
    expect(k.size).toBe(0);
  });

  it('drop() stops renewing a key and releases it only when asked', async () => {
    const k = keeper();
    const a = k.hold('a');
    const b = k.hold('b');
    await a.drop();
    expect(a.reason).toBe('released');
    expect(a.signal.aborted).toBe(true);
    expect(store.releaseCalls).toEqual([]);
    await b.drop({ release: true });
    expect(store.releaseCalls).toEqual([{ owner: 'host-1:x', keys: ['b'] }]);
    expect(k.size).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
    await advance(2 * LEASE);
    expect(store.renewCalls).toHaveLength(0);
    // Dropping again does nothing.
    await b.drop({ release: true });
    expect(store.releaseCalls).toHaveLength(1);
  });

  it('stop() aborts every lease with shutdown and releases them all in one call', async () => {
    const k = keeper();
    const leases = ['a', 'b'].map((key) => k.hold(key)).concat(k.hold('p', { renew: false }));
    await k.stop();
    expect(leases.map((l) => l.reason)).toEqual(['shutdown', 'shutdown', 'shutdown']);
    expect(store.releaseCalls).toEqual([{ owner: 'host-1:x', keys: ['a', 'b', 'p'] }]);
    expect(jest.getTimerCount()).toBe(0);
    // Nothing is kept after stop.
    const late = k.hold('c');
    expect(late.reason).toBe('shutdown');
    expect(k.size).toBe(0);
    await k.stop();
    expect(store.releaseCalls).toHaveLength(1);
  });

  it('a second stop() waits for the release the first one sent (a shutdown run twice cannot close the store under it)', async () => {
    let answer!: () => void;
    store.release = async (owner, keys) => {
      store.releaseCalls.push({ owner, keys: [...keys] });
      await new Promise<void>((r) => (answer = r));
    };
    const k = keeper();
    k.hold('a');
    const order: string[] = [];
    const first = k.stop().then(() => order.push('first'));
    const second = k.stop().then(() => order.push('second'));
    await advance(0);
    expect(order).toEqual([]);
    answer();
    await Promise.all([first, second]);
    expect(order).toEqual(['first', 'second']);
    expect(store.releaseCalls).toEqual([{ owner: 'host-1:x', keys: ['a'] }]);
  });

  it('a release that fails is logged, not thrown', async () => {
    store.release = async () => {
      throw new Error('gone');
    };
    const k = keeper();
    k.hold('a');
    await expect(k.stop()).resolves.toBeUndefined();
    expect(warnings.map((w) => w.msg)).toEqual(['releasing leases failed; they expire instead']);
  });

  it('works with a store that cannot release', async () => {
    const k = new LeaseKeeper<string>({ owner: 'o', leaseMs: LEASE, store: { renew: async (_o, keys) => new Map(keys.map((key) => [key, undefined])) } });
    const a = k.hold('a');
    await a.drop({ release: true });
    k.hold('b');
    await k.stop();
    expect(k.size).toBe(0);
  });

  it('refuses a key already held, and a renewal interval that leaves no room before the expiry', () => {
    const k = keeper();
    k.hold('a');
    expect(() => k.hold('a')).toThrow(/already held/);
    expect(() => keeper({ renewEveryMs: LEASE - MARGIN })).toThrow(/renewEveryMs/);
    expect(() => keeper({ leaseMs: 0 })).toThrow(/leaseMs/);
    void k.stop();
  });

  it('a renewal callback that throws is logged and the lease stays held', async () => {
    const k = keeper();
    const a = k.hold('a', {
      onRenewed: () => {
        throw new Error('boom');
      },
    });
    await advance(1000);
    expect(a.signal.aborted).toBe(false);
    expect(warnings.map((w) => w.msg)).toEqual(['a lease renewal callback failed']);
    await k.stop();
  });
});

describe('LeaseKeeper on real timers', () => {
  it('a process that stalled past the lease sees the abort when it next reads the signal, before any timer runs', () => {
    const k = new LeaseKeeper<string>({ owner: 'o', leaseMs: 50, store: { renew: async () => new Map() } });
    const l = k.hold('a', { renew: false });
    const until = performance.now() + 60;
    while (performance.now() < until) {
      /* a stall: the event loop gets no turn */
    }
    expect(l.signal.aborted).toBe(true);
    expect(l.reason).toBe('expired');
  });

  it('tells a lease lost to a stall (its renewals could not be sent) from one whose renewals failed', async () => {
    const warnings: Array<Record<string, unknown>> = [];
    const log = { warn: (o: Record<string, unknown>) => warnings.push(o) };
    const held = (keys: string[]) => new Map(keys.map((key) => [key, undefined]));
    // A healthy store, and an event loop blocked past the whole lease: no renewal is even sent.
    const k = new LeaseKeeper<string>({ owner: 'o', leaseMs: 300, store: { renew: async (_o, keys) => held(keys) }, log });
    const l = k.hold('a');
    const until = performance.now() + 400;
    while (performance.now() < until) {
      /* a stall: the event loop gets no turn */
    }
    await new Promise((r) => setTimeout(r, 20));
    expect(l.reason).toBe('expired');
    expect(l.stalledMs).toBeGreaterThanOrEqual(250);
    expect((l.signal.reason as Error).message).toMatch(/^the lease on "a" ended: expired \(the process stalled for \d+ ms\)$/);
    expect(warnings).toEqual([expect.objectContaining({ msg: 'the process stalled (its event loop was blocked): leases expired before they could be renewed', owner: 'o', keys: 1, stalledMs: expect.any(Number) })]);
    // The store away, the event loop free: the renewals were sent and failed; no stall is reported. (A
    // longer lease: on a loaded machine a timer may run some tens of ms late without any stall.)
    warnings.length = 0;
    const away = new LeaseKeeper<string>({ owner: 'p', leaseMs: 1500, store: { renew: async () => Promise.reject(new Error('connection refused')) }, log });
    const m = away.hold('b');
    await new Promise<void>((r) => m.signal.addEventListener('abort', () => r(), { once: true }));
    expect(m.reason).toBe('expired');
    expect(m.stalledMs).toBeUndefined();
    expect((m.signal.reason as Error).message).toBe('the lease on "b" ended: expired');
    expect(warnings.length).toBeGreaterThan(0);
    expect(new Set(warnings.map((w) => w.msg))).toEqual(new Set(['lease renewal failed; the leases are kept until they expire']));
    await k.stop();
    await away.stop();
  });

  it('does not keep the process alive (its timer is unref()d)', async () => {
    const spy = jest.spyOn(global, 'setTimeout');
    try {
      const k = new LeaseKeeper<string>({ owner: 'o', leaseMs: 60_000, store: { renew: async (_o, keys) => new Map(keys.map((key) => [key, undefined])) } });
      k.hold('a');
      const timer = spy.mock.results.at(-1)!.value as NodeJS.Timeout;
      expect(timer.hasRef()).toBe(false);
      await k.stop();
    } finally {
      spy.mockRestore();
    }
  });

  it('aborts a lost lease within one renewal interval', async () => {
    const taken = new Set<string>();
    const k = new LeaseKeeper<string>({ owner: 'o', leaseMs: 300, store: { renew: async (_o, keys) => new Map(keys.filter((key) => !taken.has(key)).map((key) => [key, undefined])) } });
    const l = k.hold('a');
    const started = Date.now();
    taken.add('a');
    await new Promise<void>((r) => l.signal.addEventListener('abort', () => r(), { once: true }));
    expect(l.reason).toBe('lost');
    expect(Date.now() - started).toBeLessThan(300);
    await k.stop();
  });
});
