/**
 * `commitment` (RFC 0068) and `heartbeat` (RFC 0060) continuation of standing goals, driven by hand
 * with a manual clock: what each arm fires, that it fires once per condition, and that every RFC
 * 0058 bound still stops it.
 */
import type { GoalHeartbeatContext, GoalHeartbeatObservation, GoalWorkSubject } from '@openwop-host/plugin-sdk';
import { GoalExtensionsService } from '../../src/capabilities/goals/goal-extensions.service';
import { GoalSchedulerService } from '../../src/capabilities/goals/goal-scheduler.service';
import { createTestApp, TestApp } from '../support/test-app';
import { FakeWorker, goalBody, instrument, ManualClock } from './goal-test-kit';

/** A runtime whose heartbeat predicate reads `observed` (an inbox, say) and asks for a run when it has unread items. */
class ProbingWorker extends FakeWorker {
  observed: unknown = { unread: 0 };
  probes = 0;
  /** When set, the predicate never answers on its own (it only ends when aborted). */
  hang = false;
  aborted = 0;

  async probe(_goal: GoalWorkSubject, ctx: GoalHeartbeatContext): Promise<GoalHeartbeatObservation> {
    this.probes++;
    if (this.hang) {
      return new Promise((_, reject) =>
        ctx.signal.addEventListener('abort', () => {
          this.aborted++;
          reject(new Error('aborted'));
        }),
      );
    }
    const unread = (this.observed as { unread?: number })?.unread ?? 0;
    return { state: this.observed, enqueue: unread > 0 };
  }
}

describe('goal continuation: commitment and heartbeat arms', () => {
  let t: TestApp;
  let token: string;
  const clock = new ManualClock();
  const worker = new FakeWorker();
  const probing = new ProbingWorker();
  let tick: () => ReturnType<GoalSchedulerService['runOnce']>;

  beforeAll(async () => {
    t = await createTestApp({ configFile: { goals: { leaseMs: 5000, heartbeatMaxRuntimeMs: 50, heartbeatMaxStateBytes: 64 } } });
    ({ tick } = instrument(t, clock, worker));
    token = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['goals:read', 'goals:write', 'runs:create'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  beforeEach(() => {
    worker.plan = () => ({ output: { green: false } });
    probing.plan = () => ({ output: { green: false } });
    probing.hang = false;
  });

  /** Two workers are registered, so a goal that starts runs names its worker (default `fake`). */
  const create = async (over: Record<string, unknown>) => {
    const manual = (over.continuation as { mode?: string } | undefined)?.mode === 'manual';
    return t.http('POST', '/v1/goals', { token, body: goalBody({ ...(manual ? {} : { worker: 'fake' }), ...over }) });
  };
  const read = async (id: string) => (await t.http('GET', `/v1/goals/${id}`, { token })).body;
  const status = async (id: string) => (await t.http('GET', `/v1/goals/${id}/status`, { token })).body;
  const events = async (goalId: string) =>
    (await t.ds.query(`SELECT "type", "payload" FROM "event" WHERE "payload"->>'goalId' = $1 ORDER BY "sequence"`, [goalId])) as Array<{ type: string; payload: Record<string, unknown> }>;
  const at = (ms: number) => new Date(clock.now().getTime() + ms).toISOString();
  const run = async (times: number, stepMs = 1000) => {
    for (let i = 0; i < times; i++) {
      clock.advance(stepMs);
      await tick();
    }
  };

  describe('advertisement', () => {
    it('advertises commitment with any worker, heartbeat only once a worker has a predicate, and creates a goal in every advertised mode', async () => {
      let doc = await t.http('GET', '/.well-known/openwop');
      expect(doc.body.agents.goals.continuation).toEqual(['schedule', 'commitment', 'manual']);
      const refused = await create({ continuation: { mode: 'heartbeat' } });
      expect([refused.status, refused.body.error]).toEqual([422, 'continuation_mode_unsupported']);

      t.moduleRef.get(GoalExtensionsService).registerWorker('probing', probing);
      doc = await t.http('GET', '/.well-known/openwop');
      expect(doc.body.agents.goals.continuation).toEqual(['schedule', 'commitment', 'heartbeat', 'manual']);
      const bodies: Record<string, Record<string, unknown>> = {
        schedule: {},
        commitment: { schedule: undefined, commitment: { at: at(60_000) } },
        heartbeat: { worker: 'probing' },
        manual: { schedule: undefined },
      };
      for (const mode of doc.body.agents.goals.continuation as string[]) {
        const res = await create({ continuation: { mode }, ...bodies[mode] });
        expect([mode, res.status]).toEqual([mode, 201]);
        expect(res.body.continuation).toEqual({ mode, armRef: mode === 'manual' ? null : `goal:${res.body.id}:${mode === 'schedule' ? 'continuation' : mode}` });
        await t.http('POST', `/v1/goals/${res.body.id}/abandon`, { token });
      }
      // A heartbeat goal needs a worker with a predicate.
      const noPredicate = await create({ continuation: { mode: 'heartbeat' }, worker: 'fake' });
      expect([noPredicate.status, noPredicate.body.error]).toEqual([422, 'worker_unavailable']);
    });

    it('refuses a commitment goal without its instant, and commitment or schedule settings in the wrong mode', async () => {
      for (const over of [
        { continuation: { mode: 'commitment' }, schedule: undefined },
        { continuation: { mode: 'commitment' }, commitment: { at: 'tomorrow' }, schedule: undefined },
        { continuation: { mode: 'commitment' }, commitment: { at: at(1000) } },
        { continuation: { mode: 'schedule' }, commitment: { at: at(1000) } },
        { continuation: { mode: 'manual' }, schedule: undefined, commitment: { at: at(1000) } },
      ]) {
        const res = await create(over);
        expect([res.status, res.body.error]).toEqual([400, 'validation_error']);
      }
      expect((await t.ds.query(`SELECT count(*)::int AS n FROM "goal" WHERE "continuation_mode" = 'commitment' AND "state" = 'active'`))[0].n).toBe(0);
    });
  });

  describe('commitment', () => {
    it('fires once at its instant (one run), stays spent until re-armed, and the iteration bound still closes the goal', async () => {
      const res = await create({ continuation: { mode: 'commitment' }, schedule: undefined, commitment: { at: at(5000) }, bounds: { maxLoopIterations: 2 } });
      const g = res.body as { id: string };
      expect((await status(g.id)).commitmentAt).toBe(at(5000));
      expect((await status(g.id)).nextDueAt).toBe(at(5000));
      await tick();
      await run(4); // t+4000: not yet
      expect(worker.runsOf(g.id)).toHaveLength(0);
      await run(1); // t+5000: fires
      expect(worker.runsOf(g.id)).toHaveLength(1);
      expect(await read(g.id)).toMatchObject({ state: 'active', progress: { iterations: 1 }, continuation: { mode: 'commitment', armRef: `goal:${g.id}:commitment` } });
      expect((await status(g.id)).commitmentAt).toBeNull();
      await run(10); // spent: at most once per satisfied condition
      expect(worker.runsOf(g.id)).toHaveLength(1);

      // A new instant re-arms it: one more run, the second unsatisfied verdict is the bound.
      const rearmed = await t.http('PATCH', `/v1/goals/${g.id}`, { token, body: { commitment: { at: at(2000) } } });
      expect(rearmed.status).toBe(200);
      await run(5);
      expect(worker.runsOf(g.id)).toHaveLength(2);
      expect(await read(g.id)).toMatchObject({ state: 'bound-exceeded', progress: { iterations: 2 }, continuation: { armRef: null } });
      expect((await events(g.id)).map((e) => e.type)).toEqual(['goal.evaluated', 'goal.evaluated', 'goal.closed']);
      // Closed: it cannot be re-armed, and nothing more runs.
      const late = await t.http('PATCH', `/v1/goals/${g.id}`, { token, body: { commitment: { at: at(1000) } } });
      expect([late.status, late.body.error]).toEqual([409, 'goal_not_active']);
      await run(3);
      expect(worker.runsOf(g.id)).toHaveLength(2);
    });

    it('a satisfied verdict on the fired run closes the goal satisfied', async () => {
      worker.plan = () => ({ output: { green: true } });
      const g = (await create({ continuation: { mode: 'commitment' }, schedule: undefined, commitment: { at: at(1000) }, bounds: { maxLoopIterations: 5 } })).body;
      await run(2);
      expect(await read(g.id)).toMatchObject({ state: 'satisfied', progress: { iterations: 1 } });
      expect((await events(g.id)).at(-1)!.payload).toEqual({ goalId: g.id, finalState: 'satisfied' });
    });

    it('closes at its deadline without firing when the commitment lies past runTimeoutMs; paused, it does not fire', async () => {
      const late = (await create({ continuation: { mode: 'commitment' }, schedule: undefined, commitment: { at: at(3_600_000) }, bounds: { runTimeoutMs: 3000 } })).body;
      const paused = (await create({ continuation: { mode: 'commitment' }, schedule: undefined, commitment: { at: at(1000) }, bounds: { maxLoopIterations: 5 } })).body;
      await t.http('POST', `/v1/goals/${paused.id}/pause`, { token });
      await run(4);
      expect(await read(late.id)).toMatchObject({ state: 'bound-exceeded', progress: { iterations: 0 } });
      expect(worker.runsOf(late.id)).toHaveLength(0);
      expect(worker.runsOf(paused.id)).toHaveLength(0);
      // Resumed, the commitment (its instant passed while paused) fires once.
      await t.http('POST', `/v1/goals/${paused.id}/resume`, { token });
      await run(3);
      expect(worker.runsOf(paused.id)).toHaveLength(1);
      await t.http('POST', `/v1/goals/${paused.id}/abandon`, { token });
    });
  });

  describe('heartbeat', () => {
    it('evaluates the predicate every tick but starts a run only on a transition, never on an unchanged tick; the iteration bound stops it', async () => {
      probing.observed = { unread: 0 };
      const g = (await create({ continuation: { mode: 'heartbeat' }, worker: 'probing', bounds: { maxLoopIterations: 2 } })).body;
      const before = probing.probes;
      await tick(); // first observation: {unread: 0}, the predicate asks for nothing
      await run(3); // unchanged
      expect(probing.probes - before).toBe(4);
      expect(probing.runsOf(g.id)).toHaveLength(0);

      probing.observed = { unread: 3 };
      await run(1); // transition: one run
      expect(probing.runsOf(g.id)).toHaveLength(1);
      await run(5); // still 3 unread: no second run (anti-spam)
      expect(probing.runsOf(g.id)).toHaveLength(1);
      expect(await read(g.id)).toMatchObject({ state: 'active', progress: { iterations: 1 }, continuation: { armRef: `goal:${g.id}:heartbeat` } });

      probing.observed = { unread: 5 };
      await run(1); // transition: the second run is the last one the bound allows
      expect(probing.runsOf(g.id)).toHaveLength(2);
      expect(await read(g.id)).toMatchObject({ state: 'bound-exceeded', progress: { iterations: 2 }, continuation: { armRef: null } });
      const probesAtClose = probing.probes;
      probing.observed = { unread: 9 };
      await run(3);
      expect(probing.runsOf(g.id)).toHaveLength(2);
      expect(probing.probes).toBe(probesAtClose);
      expect((await events(g.id)).map((e) => e.type)).toEqual(['goal.evaluated', 'goal.evaluated', 'goal.closed']);
    });

    it('a predicate over its runtime budget is abandoned and starts nothing; an oversized state starts nothing; a paused heartbeat is not evaluated', async () => {
      probing.observed = { unread: 0 };
      const g = (await create({ continuation: { mode: 'heartbeat' }, worker: 'probing', bounds: { maxLoopIterations: 5 } })).body;
      await tick();
      probing.hang = true;
      probing.observed = { unread: 1 };
      const aborted = probing.aborted;
      await run(2);
      expect(probing.aborted - aborted).toBe(2);
      expect(probing.runsOf(g.id)).toHaveLength(0);
      expect((await read(g.id)).state).toBe('active');

      probing.hang = false;
      probing.observed = { unread: 1, note: 'x'.repeat(100) }; // over heartbeatMaxStateBytes (64)
      await run(2);
      expect(probing.runsOf(g.id)).toHaveLength(0);

      await t.http('POST', `/v1/goals/${g.id}/pause`, { token });
      probing.observed = { unread: 2 };
      const probes = probing.probes;
      await run(3);
      expect(probing.probes).toBe(probes);
      await t.http('POST', `/v1/goals/${g.id}/resume`, { token });
      await tick(); // resumed: due at once, the transition starts one run
      expect(probing.runsOf(g.id)).toHaveLength(1);
      await t.http('POST', `/v1/goals/${g.id}/abandon`, { token });
    });

    it('closes at its wall-clock deadline whatever the predicate says', async () => {
      probing.observed = { unread: 0 };
      const g = (await create({ continuation: { mode: 'heartbeat' }, worker: 'probing', bounds: { runTimeoutMs: 2500 } })).body;
      await tick();
      await run(3);
      expect(await read(g.id)).toMatchObject({ state: 'bound-exceeded', progress: { iterations: 0 } });
      expect((await events(g.id)).map((e) => [e.type, e.payload.finalState])).toEqual([['goal.closed', 'bound-exceeded']]);
    });
  });
});
