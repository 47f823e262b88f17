/**
 * Which worker serves a goal, and what it is told: a goal names its workflow (`workflowId`, a host
 * extension beside the closed wire Goal) and the worker receives it, with the goal's arm, on every
 * iteration. A worker that runs workflow chains refuses a goal that names none (422, nothing written).
 */
import type { GoalWorkTarget, GoalWorkSubject } from '@openwop-host/plugin-sdk';
import { GoalExtensionsService } from '../../src/capabilities/goals/goal-extensions.service';
import { GoalSchedulerService } from '../../src/capabilities/goals/goal-scheduler.service';
import { createTestApp, TestApp } from '../support/test-app';
import { FakeWorker, goalBody, instrument, ManualClock } from './goal-test-kit';

/** Stands for a worker that starts a run of the goal's chain (as a local run engine's worker would). */
class ChainWorker extends FakeWorker {
  readonly subjects: GoalWorkSubject[] = [];

  accepts(goal: GoalWorkTarget): string | undefined {
    return goal.workflowId ? undefined : 'the goal names no workflowId';
  }

  override async start(goal: GoalWorkSubject, ctx: Parameters<FakeWorker['start']>[1]) {
    this.subjects.push(goal);
    return super.start(goal, ctx);
  }
}

describe('goal worker selection and the workflow a goal names', () => {
  let t: TestApp;
  let token: string;
  const clock = new ManualClock();
  const chains = new ChainWorker();
  let tick: () => ReturnType<GoalSchedulerService['runOnce']>;

  beforeAll(async () => {
    t = await createTestApp();
    ({ tick } = instrument(t, clock, new FakeWorker()));
    t.moduleRef.get(GoalExtensionsService).registerWorker('chains', chains);
    token = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['goals:read', 'goals:write', 'runs:create'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  const count = async () => ((await t.ds.query(`SELECT count(*)::int AS n FROM "goal"`)) as Array<{ n: number }>)[0].n;

  it('a worker refuses a goal it cannot serve (422 worker_rejected), and nothing is written', async () => {
    const before = await count();
    const res = await t.http('POST', '/v1/goals', { token, body: goalBody({ worker: 'chains' }) });
    expect([res.status, res.body.error, res.body.details]).toEqual([422, 'worker_rejected', { worker: 'chains' }]);
    expect(await count()).toBe(before);
  });

  it('the worker receives the goal workflow and arm with every iteration; the wire Goal stays schema-closed', async () => {
    const res = await t.http('POST', '/v1/goals', { token, body: goalBody({ worker: 'chains', workflowId: 'wf-release-checklist', bounds: { maxLoopIterations: 3 } }) });
    expect(res.status).toBe(201);
    expect(res.body).not.toHaveProperty('workflowId');
    const id = res.body.id as string;
    const status = await t.http('GET', `/v1/goals/${id}/status`, { token });
    expect(status.body).toMatchObject({ worker: 'chains', workflowId: 'wf-release-checklist' });
    await tick();
    expect(chains.subjects.filter((s) => s.goalId === id)).toEqual([
      { goalId: id, tenant: 'acme', principal: 'alice', objective: expect.any(String), iteration: 1, armRef: `goal:${id}:continuation`, workflowId: 'wf-release-checklist', remainingCostUsd: expect.any(Number) },
    ]);
    // Editing the workflow reaches the next iteration.
    expect((await t.http('PATCH', `/v1/goals/${id}`, { token, body: { workflowId: 'wf-release-v2' } })).status).toBe(200);
    clock.advance(1000);
    await tick();
    expect(chains.subjects.filter((s) => s.goalId === id).map((s) => [s.iteration, s.workflowId])).toEqual([
      [1, 'wf-release-checklist'],
      [2, 'wf-release-v2'],
    ]);
    await t.http('POST', `/v1/goals/${id}/abandon`, { token });
  });

  it('workflowId applies only to goals whose arm starts runs, and is validated', async () => {
    for (const body of [
      goalBody({ continuation: { mode: 'manual' }, schedule: undefined, workflowId: 'wf' }),
      goalBody({ worker: 'chains', workflowId: '' }),
      goalBody({ worker: 'chains', workflowId: 42 }),
    ]) {
      const res = await t.http('POST', '/v1/goals', { token, body });
      expect([res.status, res.body.error]).toEqual([400, 'validation_error']);
    }
  });
});
