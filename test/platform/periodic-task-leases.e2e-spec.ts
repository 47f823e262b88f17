/**
 * A periodic task's slot is held by a renewed lease: a long task keeps it while it runs, and a task
 * whose lease is taken (another owner in the row, or the lease ran out and another replica claimed the
 * slot) sees its signal aborted within about one renewal interval, and what it does after that is not
 * recorded. Two host instances share one database; the ticker is off, the test ticks.
 */
import { LeaseEndedError } from '../../src/platform/leases/lease-keeper';
import { PeriodicTask, PeriodicTaskService } from '../../src/platform/scheduler/periodic-task.service';
import { oneLine, StatementCapture } from '../support/statement-capture';
import { createTestApp, TestApp } from '../support/test-app';

const TASK = 'test.lease-probe';
const LEASE_MS = 1500;
/** The keeper renews every third of the lease. */
const RENEW_MS = LEASE_MS / 3;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The probe task of one instance: what each run does is decided by the test. */
class Probe {
  runs = 0;
  plan: (signal: AbortSignal) => Promise<void> = async () => undefined;
  readonly task: PeriodicTask = {
    name: TASK,
    intervalMs: 3_600_000,
    leaseMs: LEASE_MS,
    run: (signal) => {
      this.runs++;
      return this.plan(signal);
    },
  };
}

/** A run that waits for its signal, notes when and why it was aborted, then finishes late. */
function untilAborted(): { plan: (signal: AbortSignal) => Promise<void>; started: Promise<void>; aborted: Promise<{ at: number; reason: unknown }> } {
  let started!: () => void;
  let aborted!: (v: { at: number; reason: unknown }) => void;
  const s = new Promise<void>((r) => (started = r));
  const a = new Promise<{ at: number; reason: unknown }>((r) => (aborted = r));
  return {
    started: s,
    aborted: a,
    plan: async (signal) => {
      started();
      await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
      aborted({ at: Date.now(), reason: signal.reason });
      // Work that goes on a little after the abort: its finish must write nothing.
      await sleep(100);
    },
  };
}

describe('periodic tasks on renewed leases', () => {
  let a: TestApp;
  let b: TestApp;
  const probeA = new Probe();
  const probeB = new Probe();
  let sa: PeriodicTaskService;
  let sb: PeriodicTaskService;

  const row = async () =>
    (
      (await a.ds.query(`SELECT "lease_owner", "lease_expires_at", "last_run_at", "last_error", "next_run_at" <= now() AS "due" FROM "scheduled_task" WHERE "name" = $1`, [TASK])) as Array<{
        lease_owner: string | null;
        lease_expires_at: Date | null;
        last_run_at: Date | null;
        last_error: string | null;
        due: boolean;
      }>
    )[0];

  beforeAll(async () => {
    a = await createTestApp({ env: { OPENWOP_INSTANCE_ID: 'replica-a' } });
    b = await createTestApp({ database: a.databaseName, env: { OPENWOP_INSTANCE_ID: 'replica-b' } });
    sa = a.app.get(PeriodicTaskService);
    sb = b.app.get(PeriodicTaskService);
    sa.register(probeA.task);
    sb.register(probeB.task);
    // The first ticks run every task once (all are due on first sight), the probe doing nothing.
    await sa.tick();
    await sb.tick();
  });

  beforeEach(async () => {
    // Each test starts from a free slot, whatever the previous one left.
    await a.ds.query(`UPDATE "scheduled_task" SET "lease_owner" = NULL, "lease_expires_at" = NULL WHERE "name" = $1`, [TASK]);
  });

  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('a task whose row another owner took is aborted within about one renewal, and its late finish writes nothing', async () => {
    const before = await row();
    const run = untilAborted();
    probeA.plan = run.plan;
    await sa.trigger(TASK);
    const ticking = sa.tick();
    await run.started;
    expect((await row()).lease_owner).toMatch(/^replica-a:/);
    await a.ds.query(`UPDATE "scheduled_task" SET "lease_owner" = 'intruder:1', "lease_expires_at" = now() + interval '1 hour' WHERE "name" = $1`, [TASK]);
    const takenAt = Date.now();
    const aborted = await run.aborted;
    // One renewal interval, plus the renewal's round trip (bounded loosely: the machine is shared).
    expect(aborted.at - takenAt).toBeLessThan(3 * RENEW_MS);
    expect(aborted.reason).toBeInstanceOf(LeaseEndedError);
    expect(aborted.reason).toMatchObject({ reason: 'lost' });
    await ticking;
    const after = await row();
    expect(after).toMatchObject({ lease_owner: 'intruder:1', last_run_at: before.last_run_at, last_error: null, due: true });
    // Nest's Logger is process-wide: the line lands in the log of the instance booted last.
    expect([...a.logs, ...b.logs].some((l) => JSON.parse(l).msg === 'periodic task lost its lease; its run is not recorded')).toBe(true);
  });

  it('a task whose lease ran out and was claimed by another replica is aborted, and only the new holder records the slot', async () => {
    const run = untilAborted();
    probeA.plan = run.plan;
    let releaseB!: () => void;
    const bHolds = new Promise<void>((r) => (releaseB = r));
    const bStarted = new Promise<void>((started) => {
      probeB.plan = async () => {
        started();
        await bHolds;
      };
    });
    await sa.trigger(TASK);
    const ticking = sa.tick();
    await run.started;

    // A's lease runs out (as if its renewals had failed) and B claims the slot. A renewal of A's may
    // land between the two statements and extend the lease again: then B claims nothing, try again.
    const runsOfB = probeB.runs;
    let bTicking: Promise<void> | undefined;
    for (let attempt = 0; attempt < 10; attempt++) {
      await a.ds.query(`UPDATE "scheduled_task" SET "lease_expires_at" = now() - interval '1 second' WHERE "name" = $1`, [TASK]);
      bTicking = sb.tick();
      if (await Promise.race([bStarted.then(() => true), bTicking.then(() => false)])) break;
    }
    expect(probeB.runs).toBe(runsOfB + 1);
    const takenAt = Date.now();
    expect((await row()).lease_owner).toMatch(/^replica-b:/);

    const aborted = await run.aborted;
    expect(aborted.at - takenAt).toBeLessThan(3 * RENEW_MS);
    expect(aborted.reason).toMatchObject({ reason: 'lost' });
    await ticking;
    // A's late finish wrote nothing: B still holds the slot, not yet recorded.
    expect(await row()).toMatchObject({ lease_owner: expect.stringMatching(/^replica-b:/), due: true });

    releaseB();
    await bTicking;
    const after = await row();
    expect(after).toMatchObject({ lease_owner: null, last_error: null, due: false });
    expect(after.last_run_at).not.toBeNull();
    probeB.plan = async () => undefined;
  });

  it('a task that runs for several leases keeps its slot: the lease is renewed and another replica never claims it', async () => {
    const runsOfB = probeB.runs;
    const signals: AbortSignal[] = [];
    let abortedWhileRunning: boolean | undefined;
    probeA.plan = async (signal) => {
      signals.push(signal);
      await sleep(3 * LEASE_MS);
      abortedWhileRunning = signal.aborted;
    };
    await sa.trigger(TASK);
    const before = (await row()).last_run_at;
    const ticking = sa.tick();
    while (!signals.length) await sleep(5);
    const first = (await row()).lease_expires_at!;
    let latest = first;
    let done = false;
    void ticking.then(() => (done = true));
    // B keeps trying to claim the (due) slot while A runs; A's renewals keep pushing the expiry on.
    while (!done) {
      await sb.tick();
      const now = await row();
      if (now.lease_expires_at && now.lease_expires_at > latest) latest = now.lease_expires_at;
      await sleep(100);
    }
    expect(probeB.runs).toBe(runsOfB);
    expect(abortedWhileRunning).toBe(false);
    expect(latest.getTime()).toBeGreaterThan(first.getTime() + LEASE_MS);
    const after = await row();
    expect(after).toMatchObject({ lease_owner: null, last_error: null, due: false });
    expect(after.last_run_at!.getTime()).toBeGreaterThan(before!.getTime());
  });

  it('an idle tick writes no row: a slot not due is read, not rewritten (a task row is written at its first tick here)', async () => {
    // Each row's version (xmin): a write of the row, even of the same values, gives it a new one.
    const versions = async () =>
      new Map(
        ((await a.ds.query(`SELECT "name", "xmin"::text AS "v" FROM "scheduled_task" WHERE "next_run_at" > now() + interval '1 minute' AND "lease_owner" IS NULL`)) as Array<{ name: string; v: string }>).map((r) => [r.name, r.v]),
      );
    const before = await versions();
    // The probe's and the host's own tasks, run at the first ticks and not due again for a while.
    expect(before.size).toBeGreaterThan(3);
    await sa.tick();
    await sb.tick();
    await sa.tick();
    const after = await versions();
    const kept = [...before.keys()].filter((name) => after.has(name));
    expect(kept.length).toBe(before.size);
    for (const name of kept) expect([name, after.get(name)]).toEqual([name, before.get(name)]);
  });

  it('an idle tick sends one statement: the read of the slots due, no claim of a slot that is not', async () => {
    // Every slot, the host's own tasks' too, not due for an hour: the tick finds nothing to run.
    await a.ds.query(`UPDATE "scheduled_task" SET "next_run_at" = now() + interval '1 hour'`);
    const capture = new StatementCapture();
    capture.install();
    try {
      const idle = await capture.during(() => sa.tick());
      expect(idle.statements.map((s) => oneLine(s.text, 41))).toEqual(['SELECT "name" FROM "scheduled_task" WHERE']);
      // A slot made due is still claimed and run by the next tick.
      const runs = probeA.runs;
      await sa.trigger(TASK);
      const due = await capture.during(() => sa.tick());
      expect(probeA.runs).toBe(runs + 1);
      expect(due.statements.map((s) => oneLine(s.text, 30))).toEqual(expect.arrayContaining(['SELECT "name" FROM "scheduled_', 'UPDATE "scheduled_task" SET "l']));
      expect(await row()).toMatchObject({ lease_owner: null, last_error: null, due: false });
    } finally {
      capture.restore();
    }
  });

  it('a host that stops aborts its running task (shutdown) and hands the slot back at once', async () => {
    const c = await createTestApp({ database: a.databaseName, env: { OPENWOP_INSTANCE_ID: 'replica-c' } });
    const sc = c.app.get(PeriodicTaskService);
    const run = untilAborted();
    sc.register({ ...new Probe().task, run: run.plan });
    await sa.trigger(TASK);
    const ticking = sc.tick();
    await run.started;
    expect((await row()).lease_owner).toMatch(/^replica-c:/);
    const closing = c.close();
    const aborted = await run.aborted;
    expect(aborted.reason).toMatchObject({ reason: 'shutdown' });
    await ticking;
    await closing;
    // Released, not recorded: the slot is due and free for the next replica.
    expect(await row()).toMatchObject({ lease_owner: null, lease_expires_at: null, due: true });
  });
});
