import type { DataSource } from 'typeorm';
import { ClaimerHost, RunClaimer } from './run-claimer';
import type { ClaimedRow, FlushParams } from './run-store';

const flush = (runId: string, update: FlushParams['update'] = {}): FlushParams => ({ runId, owner: 'o', fence: 1, tenant: 't', workspace: null, leaseMs: 1000, nodeExecutions: 0, costUsd: 0, update, writes: [], events: [], eventIds: [] });
const row = (id: string): ClaimedRow => ({ id, tenant: 't', workspace: null, principal: 'p', status: 'pending', workflow_id: 'w', definition: { workflowId: 'w', nodes: [], edges: [] }, inputs: {}, configurable: {}, scopes: [], fence: 1, cancel_requested: false, node_executions: 0, cost_usd: 0, started_at: null });

function host(over: Partial<ClaimerHost> = {}) {
  const started: string[] = [];
  let active = 0;
  const h: ClaimerHost = {
    ds: {} as DataSource,
    owner: 'replica:1',
    settings: { maxActiveRuns: 4, leaseMs: 1000, executing: true },
    active: () => active,
    stopped: () => false,
    has: () => false,
    executes: () => false,
    start: (r) => {
      started.push(r.id);
      active++;
    },
    health: () => undefined,
    log: { error: () => undefined },
    ...over,
  };
  return { h, started, setActive: (n: number) => (active = n) };
}

describe('RunClaimer (slots, and claims folded into writes)', () => {
  it('a write claims for the slots its finishing runs free plus those free now, and promises them until it answers', () => {
    const { h, started, setActive } = host();
    const c = new RunClaimer(h);
    setActive(4);
    // Two of the four runs finish in this write, one only progresses: two slots to refill.
    const claim = c.take([flush('a', { status: 'completed', terminal: true }), flush('b', { status: 'waiting-approval', release: true }), flush('c')]);
    expect(claim).toMatchObject({ owner: 'replica:1', leaseMs: 1000, limit: 2 });
    // Promised: nothing else claims those slots meanwhile.
    setActive(2);
    expect(c.room()).toBe(0);
    expect(c.reserve('t')).toBeUndefined();
    c.give([row('x'), row('y')], claim, Date.now());
    expect(started).toEqual(['x', 'y']);
    expect(c.room()).toBe(0);
  });

  it('claims nothing while no run may be waiting: a claim that came back short says the backlog is empty', () => {
    const { h, setActive } = host();
    const c = new RunClaimer(h);
    setActive(1);
    const first = c.take([flush('a', { status: 'completed', terminal: true })]);
    expect(first.limit).toBe(4);
    setActive(0);
    c.give([row('x')], first, Date.now());
    expect(c.take([flush('b', { status: 'completed', terminal: true })]).limit).toBe(0);
    // A notification (or a run created here without a slot) says there may be work again.
    (c as unknown as { claimAvailable: () => Promise<void> }).claimAvailable = async () => undefined;
    c.noteClaimable();
    expect(c.take([flush('b', { status: 'completed', terminal: true })]).limit).toBeGreaterThan(0);
  });

  it('a claim that came back short while a wake-up arrived does not conclude that nothing waits', () => {
    const { h, setActive } = host();
    const c = new RunClaimer(h);
    (c as unknown as { claimAvailable: () => Promise<void> }).claimAvailable = async () => undefined;
    setActive(1);
    const claim = c.take([flush('a', { status: 'completed', terminal: true })]);
    // A run was announced while the write was out: its claim may have been sent too early to see it.
    c.noteClaimable();
    setActive(0);
    c.give([], claim, Date.now());
    expect(c.take([]).limit).toBe(4);
  });

  it('a write that failed claimed nothing: its promised slots are free again and runs may still be waiting', () => {
    const { h, started, setActive } = host();
    const c = new RunClaimer(h);
    setActive(1);
    const claim = c.take([flush('a', { status: 'completed', terminal: true })]);
    expect(claim.limit).toBe(4);
    expect(c.room()).toBe(-1);
    setActive(0);
    c.give([], claim, Date.now(), true);
    expect(c.room()).toBe(4);
    expect(started).toEqual([]);
    expect(c.take([]).limit).toBe(4);
  });

  it('claims nothing for an engine that does not claim on its own, or that is stopping (and hands back what a write claimed then)', async () => {
    expect(new RunClaimer(host({ settings: { maxActiveRuns: 4, leaseMs: 1000, executing: false } }).h).take([flush('a', { terminal: true })]).limit).toBe(0);
    let stopping = false;
    const { h, started } = host({ stopped: () => stopping });
    const c = new RunClaimer(h);
    const claim = c.take([]);
    stopping = true;
    expect(c.take([]).limit).toBe(0);
    const released: unknown[] = [];
    (h as { ds: unknown }).ds = { query: async (...a: unknown[]) => released.push(a) };
    c.give([row('x')], claim, Date.now());
    expect(started).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(released).toHaveLength(1);
  });

  it('reserves slots for runs created here and frees them when nothing was inserted', () => {
    const { h } = host();
    const c = new RunClaimer(h);
    for (let i = 0; i < 4; i++) expect(c.reserve('t')).toEqual({ tenant: 't', newcomer: false });
    expect(c.reserve('t')).toBeUndefined();
    c.unreserve();
    expect(c.reserve('t')).toEqual({ tenant: 't', newcomer: false });
  });

  it('under a tenant cap: no run is claimed by its own insert or alone, a short claim leaves the backlog open, and writes pass the cap', async () => {
    const { h, setActive } = host({ settings: { maxActiveRuns: 4, leaseMs: 1000, executing: true, admission: { tenantMaxActiveRuns: 2 } } });
    const c = new RunClaimer(h);
    // Every run goes through the fair claim, which counts its tenant's active runs.
    expect(c.reserve('t')).toBeUndefined();
    let passes = 0;
    (c as unknown as { claimAvailable: () => Promise<void> }).claimAvailable = async () => void passes++;
    c.kick('r1');
    // After the newcomers' claim (here a database that fails: the pass follows all the same).
    await new Promise((r) => setImmediate(r));
    expect(passes).toBe(1);
    setActive(1);
    const first = c.take([flush('a', { status: 'completed', terminal: true })]);
    expect(first).toMatchObject({ limit: 4, tenantCap: 2 });
    setActive(0);
    // Short (the other runs' tenant is at its cap): a slot freed later must look again.
    c.give([row('x')], first, Date.now());
    expect(c.take([flush('b', { status: 'completed', terminal: true })]).limit).toBeGreaterThan(0);
  });
});

describe('RunClaimer: the newcomers\' reserve (fair claims)', () => {
  /** A database that answers each claim statement with the next of `answers`, recording the statement's values. */
  function database(answers: ClaimedRow[][]) {
    const claims: unknown[][] = [];
    const ds = { query: async (_text: string, values: unknown[]) => (claims.push(values), answers.shift() ?? []) };
    return { ds: ds as unknown as DataSource, claims };
  }
  const fair = { maxActiveRuns: 32, leaseMs: 1000, executing: true, admission: { fairClaims: true } };
  const settle = () => new Promise((r) => setImmediate(r));

  it('a wake-up on a saturated engine claims at once, with a cap of one, into slots beyond the capacity', async () => {
    const db = database([[row('q1')]]);
    const { h, started, setActive } = host({ ds: db.ds, settings: fair, has: (id) => started.includes(id) });
    const c = new RunClaimer(h);
    expect(c.newcomerSlots()).toBe(2);
    setActive(32);
    expect(c.room()).toBe(0);
    c.noteClaimable();
    await settle();
    // [owner, leaseMs, limit, cap]: the reserve's two slots, one run per tenant with nothing executing.
    expect(db.claims[0]).toEqual(['replica:1', 1000, 2, 1]);
    expect(started).toEqual(['q1']);
    // Its slot is the reserve's: the capacity's room is what it was, and its writes leave alone.
    setActive(33);
    expect(c.room()).toBe(0);
    expect(c.urgent('q1')).toBe(true);
    expect(c.urgent('other')).toBe(false);
    // Its finishing write frees no slot of the capacity (nothing to refill for it).
    expect(c.take([flush('q1', { status: 'completed', terminal: true })]).limit).toBe(0);
  });

  it('a full reserve claims nothing more until one of its runs ends, then claims the newcomer that waited', async () => {
    const db = database([[row('q1'), row('q2')], [row('q3')]]);
    const { h, started, setActive } = host({ ds: db.ds, settings: fair, has: (id) => started.includes(id) });
    const c = new RunClaimer(h);
    setActive(32);
    c.noteClaimable();
    await settle();
    setActive(34);
    expect(started).toEqual(['q1', 'q2']);
    c.noteClaimable();
    await settle();
    expect(db.claims).toHaveLength(1);
    // q1 ends: its reserve slot claims again (one slot left), and no claim pass is sent for it.
    started.splice(0, 1);
    setActive(33);
    c.freed('q1');
    await settle();
    expect(db.claims).toHaveLength(2);
    expect(db.claims[1]).toEqual(['replica:1', 1000, 1, 1]);
    expect(c.urgent('q1')).toBe(false);
    expect(c.urgent('q3')).toBe(true);
  });

  it('a run in the reserve takes over the next slot of the capacity that frees, so the reserve is free again for the next newcomer', async () => {
    const db = database([[row('q1'), row('q2')], [row('q3')]]);
    const { h, started, setActive } = host({ ds: db.ds, settings: fair, has: (id) => started.includes(id) });
    const c = new RunClaimer(h);
    setActive(32);
    c.noteClaimable();
    await settle();
    setActive(34);
    c.noteClaimable(); // the reserve is full: this newcomer waits
    await settle();
    expect(db.claims).toHaveLength(1);
    // One of the capacity's runs ends: q1 takes its slot over (no claim pass for it), the reserve claims again.
    setActive(33);
    (c as unknown as { claimAvailable: () => Promise<void> }).claimAvailable = async () => void db.claims.push(['pass']);
    c.freed('x');
    await settle();
    expect(db.claims).toEqual([expect.anything(), ['replica:1', 1000, 1, 1]]);
    expect(c.room()).toBe(0);
    // Its writes stay urgent: it is still a tenant's first run.
    expect(c.urgent('q1')).toBe(true);
  });

  /** A database that records each statement's text and values and answers it when told (`answer`). */
  function pending() {
    const sent: Array<{ text: string; values: unknown[]; answer: (rows: ClaimedRow[]) => void }> = [];
    const ds = { query: (text: string, values: unknown[]) => new Promise<ClaimedRow[]>((answer) => sent.push({ text, values, answer })) };
    return { ds: ds as unknown as DataSource, sent };
  }
  const named = (text: string) => text.includes('"id" = ANY($1::uuid[])');

  it('a wake-up naming its run claims that run by id into the reserve; the wake-ups meanwhile are served by one claim after it', async () => {
    const db = pending();
    const { h, started, setActive } = host({ ds: db.ds, settings: fair, has: (id) => started.includes(id) });
    const c = new RunClaimer(h);
    (c as unknown as { claimAvailable: () => Promise<void> }).claimAvailable = async () => undefined;
    setActive(32);
    c.noteClaimable({ runId: 'q1', tenant: 'a' });
    await settle();
    expect(db.sent).toHaveLength(1);
    // [ids, owner, leaseMs, limit]: by primary key, at most the reserve's two slots.
    expect(named(db.sent[0].text)).toBe(true);
    expect(db.sent[0].values).toEqual([['q1'], 'replica:1', 1000, 2]);
    c.noteClaimable({ runId: 'q2', tenant: 'b' });
    c.noteClaimable({ runId: 'q3', tenant: 'c' });
    await settle();
    expect(db.sent).toHaveLength(1);
    db.sent[0].answer([row('q1')]);
    await settle();
    expect(started).toEqual(['q1']);
    expect(c.urgent('q1')).toBe(true);
    setActive(33);
    // One claim for both, limited to the slot q1 leaves.
    expect(db.sent).toHaveLength(2);
    expect(db.sent[1].values).toEqual([['q2', 'q3'], 'replica:1', 1000, 1]);
    db.sent[1].answer([]);
    await settle();
    // A wake-up that names no run (a batch, a released lease, a missed notification): the claim over every tenant.
    c.noteClaimable();
    await settle();
    expect(named(db.sent[2].text)).toBe(false);
    expect(db.sent[2].values).toEqual(['replica:1', 1000, 1, 1]);
  });

  it('a named run of a tenant that executes runs here is no newcomer: no claim looks it up', async () => {
    const db = pending();
    const { h, setActive } = host({ ds: db.ds, settings: fair, executes: (t) => t === 'flood' });
    const c = new RunClaimer(h);
    let passes = 0;
    (c as unknown as { claimAvailable: () => Promise<void> }).claimAvailable = async () => void passes++;
    setActive(32);
    c.noteClaimable({ runId: 'f1', tenant: 'flood' });
    await settle();
    expect(db.sent).toHaveLength(0);
    expect(passes).toBe(1);
    // Nor one of a tenant whose other run is being inserted into the reserve here (that insert has not committed yet).
    expect(c.reserve('a')!.newcomer).toBe(true);
    c.noteClaimable({ runId: 'a2', tenant: 'a' });
    await settle();
    expect(db.sent).toHaveLength(0);
  });

  it("a creation here is promised a slot of the reserve only for a tenant with nothing executing here, one per tenant, never more than the reserve's slots with the claims in flight", async () => {
    const db = pending();
    const { h, started, setActive } = host({ ds: db.ds, settings: fair, has: (id) => started.includes(id), executes: (t) => t === 'flood' });
    const c = new RunClaimer(h);
    (c as unknown as { claimAvailable: () => Promise<void> }).claimAvailable = async () => undefined;
    setActive(31);
    // Room in the capacity: a slot of it, whoever asks.
    expect(c.reserve('flood')).toEqual({ tenant: 'flood', newcomer: false });
    c.unreserve();
    setActive(32);
    expect(c.reserve('flood')).toBeUndefined();
    expect(c.reserve('a', false)).toBeUndefined();
    const a = c.reserve('a');
    expect(a).toEqual({ tenant: 'a', newcomer: true });
    // One run of a tenant at a time goes for the reserve.
    expect(c.reserve('a')).toBeUndefined();
    const b = c.reserve('b')!;
    expect(b.newcomer).toBe(true);
    expect(c.reserve('c')).toBeUndefined();
    // Its insert found another run of the tenant: the slot is free again.
    c.unreserve(a!);
    expect(c.reserve('c')!.newcomer).toBe(true);
    c.unreserve({ tenant: 'c', newcomer: true });
    // b's insert claimed it: it starts in the reserve (the capacity is full) and holds that slot until it ends.
    c.admit(b, 'qb', () => {
      started.push('qb');
      setActive(33);
    });
    expect(c.urgent('qb')).toBe(true);
    expect(c.room()).toBe(0);
    // A newcomers' claim in flight holds what it may take: the last slot.
    c.noteClaimable();
    await settle();
    expect(db.sent[0].values).toEqual(['replica:1', 1000, 1, 1]);
    expect(c.reserve('d')).toBeUndefined();
    db.sent[0].answer([]);
    await settle();
    expect(c.reserve('d')!.newcomer).toBe(true);
    // qb ends: its slot of the reserve frees.
    started.splice(started.indexOf('qb'), 1);
    setActive(32);
    c.freed('qb');
    expect(c.reserve('e')!.newcomer).toBe(true);
    expect(c.reserve('f')).toBeUndefined();
  });

  it('a run its insert claimed into the reserve takes a slot of the capacity instead when one freed meanwhile', () => {
    const { h, started, setActive } = host({ settings: fair, has: (id) => started.includes(id) });
    const c = new RunClaimer(h);
    setActive(32);
    const r = c.reserve('a')!;
    expect(r.newcomer).toBe(true);
    setActive(31);
    c.admit(r, 'qa', () => {
      started.push('qa');
      setActive(32);
    });
    expect(c.room()).toBe(0);
    // Not the reserve's: two newcomers may still come.
    expect(c.reserve('b')!.newcomer).toBe(true);
    expect(c.reserve('c')!.newcomer).toBe(true);
    // A run that did not start (the engine was stopping) holds no slot of the reserve.
    const other = host({ settings: fair });
    const d = new RunClaimer(other.h);
    other.setActive(32);
    const x = d.reserve('x')!;
    d.admit(x, 'qx', () => undefined);
    expect(d.urgent('qx')).toBe(false);
    expect(d.reserve('y')!.newcomer).toBe(true);
    expect(d.reserve('z')!.newcomer).toBe(true);
  });

  it('is no part of oldest-first claims (fair claims off): a wake-up sends the claim pass alone', async () => {
    const db = database([]);
    const { h, setActive } = host({ ds: db.ds, settings: { maxActiveRuns: 32, leaseMs: 1000, executing: true } });
    const c = new RunClaimer(h);
    expect(c.newcomerSlots()).toBe(0);
    setActive(32);
    expect(c.reserve('a')).toBeUndefined();
    c.noteClaimable({ runId: 'q1', tenant: 'a' });
    c.noteClaimable();
    await settle();
    expect(db.claims).toHaveLength(0);
  });
});
