/**
 * Standing goals over HTTP: creation rules (bounds first), validation, the judge-only state,
 * manual runs judged once, bounds, pause/resume/abandon, tenancy, scopes and the events.
 */
import { RunService } from '../../src/capabilities/runs/run.service';
import { EventLogService } from '../../src/platform/events/event-log.service';
import { systemPrincipal } from '../../src/platform/identity/principal';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import { GoalClock } from '../../src/capabilities/goals/goal-clock';
import { createTestApp, TestApp } from '../support/test-app';
import { CRITERIA, ManualClock } from './goal-test-kit';

const PAYLOADS = 'https://openwop.dev/spec/v1/run-event-payloads.schema.json';
const schemas = SchemaRegistry.shared();

function manualGoal(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    objective: 'keep the release checklist green',
    completion: { check: 'host' },
    criteria: CRITERIA,
    continuation: { mode: 'manual' },
    bounds: { maxLoopIterations: 5 },
    ...over,
  };
}

describe('goals API', () => {
  let t: TestApp;
  let alice: string; // acme writer
  let bob: string; // acme writer, another principal
  let reader: string; // acme goals:read only
  let mallory: string; // another tenant
  let noScope: string;
  let events: string; // acme runs:read (host event stream)
  const clock = new ManualClock();

  beforeAll(async () => {
    t = await createTestApp({ openApi: false, env: { OPENWOP_TEST_SEAMS: 'true' }, configFile: { goals: { limits: { maxLoopIterations: 20, maxRunDurationMs: 86_400_000, maxBudgetCostUsd: 50 } } } });
    t.moduleRef.get(GoalClock).useSource(clock.now);
    alice = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['goals:read', 'goals:write'] });
    bob = await t.key({ tenant: 'acme', principal: 'bob', scopes: ['goals:read', 'goals:write'] });
    reader = await t.key({ tenant: 'acme', principal: 'carol', scopes: ['goals:read'] });
    mallory = await t.key({ tenant: 'evil', principal: 'alice', scopes: ['goals:read', 'goals:write'] });
    noScope = await t.key({ tenant: 'acme', principal: 'alice', scopes: ['runs:read'] });
    events = await t.key({ tenant: 'acme', principal: 'auditor', scopes: ['runs:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  const create = async (body: Record<string, unknown> = manualGoal(), token = alice) => {
    const res = await t.http('POST', '/v1/goals', { token, body });
    expect(res.status).toBe(201);
    return res.body as { id: string; [k: string]: unknown };
  };

  const goalEvents = async (goalId: string) => {
    const res = await t.http('GET', '/v1/runs/host/events/poll?lastSequence=0', { token: events });
    expect(res.status).toBe(200);
    return (res.body.events as Array<{ type: string; payload: Record<string, unknown> }>).filter((e) => e.payload.goalId === goalId);
  };

  describe('discovery', () => {
    it('advertises agents.goals (schedule and commitment served by the local run engine\'s worker) and the host limits, in a valid document', async () => {
      const res = await t.http('GET', '/.well-known/openwop');
      expect(res.status).toBe(200);
      // No remote runtime is configured: the local-run worker (the host's own run engine) serves the run modes; it has no heartbeat predicate.
      expect(res.body.agents.goals).toEqual({ judge: 'host', continuation: ['schedule', 'commitment', 'manual'], requiresBounds: true });
      expect(res.body.limits).toMatchObject({ maxLoopIterations: 20, maxRunDurationMs: 86_400_000, maxBudgetCostUsd: 50 });
      expect(schemas.validate('capabilities', res.body)).toEqual([]);
    });
  });

  describe('create', () => {
    it.each(['/v1/goals', '/v1/host/sample/goals'])('%s refuses a goal without bounds with 422 before any other check', async (path) => {
      for (const body of [
        { objective: 'unbounded work', completion: { check: 'host' }, continuation: { mode: 'manual' } },
        { objective: 'unbounded work', completion: { check: 'vibes' }, continuation: { mode: 'whenever' }, extra: 1 },
        { completion: { check: 'host' }, continuation: { mode: 'manual' }, bounds: {} },
        { objective: 'x', completion: { check: 'host' }, continuation: { mode: 'manual' }, bounds: 'lots' },
      ]) {
        const res = await t.http('POST', path, { token: alice, body });
        expect(res.status).toBe(422);
        expect(res.body).toEqual({ error: 'bounds_required', message: expect.any(String), details: { requiresBounds: true } });
      }
    });

    it('creates an active goal (201 normative, 200 seam) that validates against goal.schema.json, with clamped bounds', async () => {
      const res = await t.http('POST', '/v1/goals', { token: alice, body: manualGoal({ bounds: { maxLoopIterations: 1000, maxCostUsd: 3 } }) });
      expect(res.status).toBe(201);
      expect(schemas.validate('goal', res.body)).toEqual([]);
      expect(res.body).toMatchObject({
        state: 'active',
        completion: { check: 'host', verifierRef: null, lastVerdict: null },
        continuation: { mode: 'manual', armRef: null },
        bounds: { maxLoopIterations: 20, maxCostUsd: 3, runTimeoutMs: 86_400_000 },
        progress: { iterations: 0, contributingRunIds: [] },
        owner: { tenant: 'acme', principal: 'alice' },
        createdAt: clock.now().toISOString(),
      });
      expect(res.body).not.toHaveProperty('criteria');
      const seam = await t.http('POST', '/v1/host/sample/goals', { token: alice, body: manualGoal() });
      expect(seam.status).toBe(200);
      expect(schemas.validate('goal', seam.body)).toEqual([]);
    });

    it.each([
      ['a missing objective', { objective: undefined }],
      ['an empty objective', { objective: '' }],
      ['an unknown judge', { completion: { check: 'vibes' } }],
      ['an unknown continuation mode', { continuation: { mode: 'whenever' } }],
      ['an unknown field', { colour: 'green' }],
      ['a non-integer iteration bound', { bounds: { maxLoopIterations: 2.5 } }],
      ['a zero iteration bound', { bounds: { maxLoopIterations: 0 } }],
      ['a negative cost ceiling', { bounds: { maxCostUsd: -1 } }],
      ['an unknown bound', { bounds: { maxLoopIterations: 3, maxTokens: 5 } }],
      ['criteria that are no JSON Schema', { criteria: { type: 'nonsense' } }],
      ['criteria for the verifier judge', { completion: { check: 'verifier' } }],
      ['a lastVerdict supplied by the client', { completion: { check: 'host', lastVerdict: { satisfied: true, confidence: 1, runId: 'r' } } }],
    ])('answers 400 validation_error for %s', async (_name, over) => {
      const res = await t.http('POST', '/v1/goals', { token: alice, body: manualGoal(over) });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
      expect(Object.keys(res.body).sort()).toEqual(['details', 'error', 'message']);
    });

    it('answers 400 for a body that is not JSON', async () => {
      const res = await t.http('POST', '/v1/goals', { token: alice, rawBody: '{"objective":', headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(typeof res.body.error).toBe('string');
    });

    it('refuses what it does not serve: a client state, host judging without criteria, unwired modes (422)', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [manualGoal({ state: 'satisfied' }), 'validation_error'],
        [manualGoal({ criteria: undefined }), 'criteria_required'],
        [manualGoal({ continuation: { mode: 'heartbeat' } }), 'continuation_mode_unsupported'],
        // The only worker is the local run engine's: it serves schedule and commitment goals that name a workflow.
        [manualGoal({ continuation: { mode: 'commitment' } }), 'worker_rejected'],
        [manualGoal({ continuation: { mode: 'schedule' } }), 'worker_rejected'],
      ];
      for (const [body, code] of cases) {
        const res = await t.http('POST', '/v1/goals', { token: alice, body });
        expect(res.status).toBe(422);
        expect(res.body.error).toBe(code);
      }
    });

    it('requires goals:write (403) and a credential (401)', async () => {
      expect((await t.http('POST', '/v1/goals', { token: reader, body: manualGoal() })).status).toBe(403);
      expect((await t.http('POST', '/v1/goals', { body: manualGoal() })).status).toBe(401);
      expect((await t.http('GET', '/v1/goals', { token: noScope })).status).toBe(403);
      expect((await t.http('GET', '/v1/goals')).status).toBe(401);
    });
  });

  describe('read', () => {
    it('lists by state and reads one, on both paths; unknown, malformed and foreign ids are 404', async () => {
      const g = await create();
      for (const base of ['/v1/goals', '/v1/host/sample/goals']) {
        const list = await t.http('GET', `${base}?state=active`, { token: reader });
        expect(list.status).toBe(200);
        expect(list.body.goals.map((x: { id: string }) => x.id)).toContain(g.id);
        for (const x of list.body.goals) expect(schemas.validate('goal', x)).toEqual([]);
        expect((await t.http('GET', `${base}?state=satisfied`, { token: reader })).body.goals.map((x: { id: string }) => x.id)).not.toContain(g.id);
        const one = await t.http('GET', `${base}/${g.id}`, { token: reader });
        expect(one.status).toBe(200);
        expect(one.body).toEqual(g);
        for (const id of ['0b0f3a52-86a4-4f3a-9d0e-0d6f3c1b2a11', 'not-a-uuid']) {
          const res = await t.http('GET', `${base}/${id}`, { token: reader });
          expect(res.status).toBe(404);
          expect(res.body.error).toBe('not_found');
        }
      }
    });

    it('answers 400 for an unknown state filter', async () => {
      const res = await t.http('GET', '/v1/goals?state=done', { token: alice });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
    });

    it('drives a flow through the generated OpenAPI client', async () => {
      const api = t.api(alice);
      const created = await api.POST('/v1/goals', { body: manualGoal() as never });
      expect(created.response.status).toBe(201);
      const id = (created.data as { id: string }).id;
      const read = await api.GET('/v1/goals/{id}', { params: { path: { id } } });
      expect(read.response.status).toBe(200);
      expect((read.data as { state: string }).state).toBe('active');
      const listed = await api.GET('/v1/goals', { params: { query: { state: 'active' } } });
      expect((listed.data as { goals: Array<{ id: string }> }).goals.map((g) => g.id)).toContain(id);
    });
  });

  describe('tenancy and ownership', () => {
    it('hides a goal from another tenant entirely (list, read and every mutation answer like an unknown id)', async () => {
      const g = await create();
      const list = await t.http('GET', '/v1/goals', { token: mallory });
      expect(list.body.goals.map((x: { id: string }) => x.id)).not.toContain(g.id);
      const attempts: Array<[string, string, unknown]> = [
        ['GET', `/v1/goals/${g.id}`, undefined],
        ['GET', `/v1/goals/${g.id}/status`, undefined],
        ['PATCH', `/v1/goals/${g.id}`, { objective: 'mine now' }],
        ['POST', `/v1/goals/${g.id}`, { state: 'satisfied' }],
        ['POST', `/v1/goals/${g.id}/pause`, undefined],
        ['POST', `/v1/goals/${g.id}/resume`, undefined],
        ['POST', `/v1/goals/${g.id}/abandon`, undefined],
        ['POST', `/v1/goals/${g.id}/runs`, { runId: 'r-evil', output: { green: true } }],
      ];
      for (const [method, url, body] of attempts) {
        const res = await t.http(method, url, { token: mallory, body });
        expect(res.status).toBe(404);
        expect(res.body.error).toBe('not_found');
      }
      const after = await t.http('GET', `/v1/goals/${g.id}`, { token: alice });
      expect(after.body).toEqual(g);
    });

    it('scopes a workspace-bound key to the goals of its workspace', async () => {
      const ws1 = await t.key({ tenant: 'acme', workspace: 'ws-1', principal: 'alice', scopes: ['goals:read', 'goals:write'] });
      const ws2 = await t.key({ tenant: 'acme', workspace: 'ws-2', principal: 'alice', scopes: ['goals:read', 'goals:write'] });
      const g = await create(manualGoal(), ws1);
      expect(g.owner).toEqual({ tenant: 'acme', workspace: 'ws-1', principal: 'alice' });
      expect((await t.http('GET', '/v1/goals', { token: ws2 })).body.goals.map((x: { id: string }) => x.id)).not.toContain(g.id);
      expect((await t.http('GET', `/v1/goals/${g.id}`, { token: ws2 })).status).toBe(404);
      expect((await t.http('POST', `/v1/goals/${g.id}/pause`, { token: ws2 })).status).toBe(404);
      expect((await t.http('GET', '/v1/goals', { token: ws1 })).body.goals.map((x: { id: string }) => x.id)).toContain(g.id);
    });

    it('lets another principal of the tenant read a goal but not change it (404)', async () => {
      const g = await create();
      expect((await t.http('GET', `/v1/goals/${g.id}`, { token: bob })).status).toBe(200);
      for (const [method, url, body] of [
        ['PATCH', `/v1/goals/${g.id}`, { objective: 'x' }],
        ['POST', `/v1/goals/${g.id}/abandon`, undefined],
        ['POST', `/v1/goals/${g.id}/runs`, { runId: 'r-bob', output: { green: true } }],
      ] as Array<[string, string, unknown]>) {
        expect((await t.http(method, url, { token: bob, body })).status).toBe(404);
      }
      expect((await t.http('GET', `/v1/goals/${g.id}`, { token: alice })).body.state).toBe('active');
    });
  });

  describe('update', () => {
    it.each([
      ['POST', '/v1/host/sample/goals'],
      ['PATCH', '/v1/goals'],
      ['POST', '/v1/goals'],
    ])('%s %s/{id} refuses a client-set terminal state with 422 and leaves the goal unchanged', async (method, base) => {
      const g = await create();
      for (const state of ['satisfied', 'bound-exceeded', 'escalated', 'abandoned']) {
        const res = await t.http(method, `${base}/${g.id}`, { token: alice, body: { state } });
        expect(res.status).toBe(422);
        expect(res.body).toEqual({ error: 'validation_error', message: expect.any(String), details: { state } });
      }
      expect((await t.http('GET', `/v1/goals/${g.id}`, { token: alice })).body).toEqual(g);
    });

    it('edits objective, criteria and judge of an active goal', async () => {
      const g = await create();
      clock.advance(10);
      const res = await t.http('PATCH', `/v1/goals/${g.id}`, { token: alice, body: { objective: 'keep main green', criteria: { type: 'object', required: ['ok'] } } });
      expect(res.status).toBe(200);
      expect(res.body.objective).toBe('keep main green');
      expect(res.body.updatedAt).toBe(clock.now().toISOString());
      const status = await t.http('GET', `/v1/goals/${g.id}/status`, { token: alice });
      expect(status.body.criteria).toEqual({ type: 'object', required: ['ok'] });
      const toVerifier = await t.http('POST', `/v1/goals/${g.id}`, { token: alice, body: { completion: { check: 'verifier', verifierRef: 'critic-1' } } });
      expect(toVerifier.status).toBe(200);
      expect(toVerifier.body.completion).toEqual({ check: 'verifier', verifierRef: 'critic-1', lastVerdict: null });
      expect(schemas.validate('goal', toVerifier.body)).toEqual([]);
    });

    it.each([
      ['a non-string objective', { objective: 5 }],
      ['an unknown field', { bounds: { maxLoopIterations: 1 } }],
      ['an unknown judge', { completion: { check: 'vibes' } }],
      ['a body that is an array', []],
    ])('answers 400 validation_error for %s', async (_n, body) => {
      const g = await create();
      const res = await t.http('PATCH', `/v1/goals/${g.id}`, { token: alice, body });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
    });
  });

  describe('manual runs and the host judge', () => {
    it('judges each reported run once: verdict, iterations, contributing runs, content-free goal.evaluated', async () => {
      const g = await create();
      const first = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: 'run-a', costUsd: 0.5, output: { green: false } } });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({
        state: 'active',
        completion: { lastVerdict: { satisfied: false, confidence: 1, runId: 'run-a' } },
        progress: { iterations: 1, contributingRunIds: ['run-a'] },
      });
      // The same run again (even with a different claimed output and cost) changes nothing.
      const again = await t.http('POST', `/v1/host/sample/goals/${g.id}/runs`, { token: alice, body: { runId: 'run-a', costUsd: 9, output: { green: true } } });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      expect((await t.http('GET', `/v1/goals/${g.id}/status`, { token: alice })).body.accumulatedCostUsd).toBe(0.5);

      const done = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: 'run-b', output: { green: true } } });
      expect(done.body).toMatchObject({ state: 'satisfied', completion: { lastVerdict: { satisfied: true, runId: 'run-b' } }, progress: { iterations: 2, contributingRunIds: ['run-a', 'run-b'] } });
      expect(schemas.validate('goal', done.body)).toEqual([]);

      const ev = await goalEvents(g.id);
      expect(ev.map((e) => e.type)).toEqual(['goal.evaluated', 'goal.evaluated', 'goal.closed']);
      expect(ev[0].payload).toEqual({ goalId: g.id, satisfied: false, confidence: 1, runId: 'run-a', iterations: 1 });
      expect(ev[2].payload).toEqual({ goalId: g.id, finalState: 'satisfied' });
      for (const e of ev) {
        const def = e.type === 'goal.evaluated' ? 'goalEvaluated' : 'goalClosed';
        expect(schemas.validateWith({ $ref: `${PAYLOADS}#/$defs/${def}` }, e.payload)).toEqual([]);
        expect(JSON.stringify(e.payload)).not.toContain('release checklist');
      }

      const history = await t.http('GET', `/v1/goals/${g.id}/runs`, { token: reader });
      expect(history.status).toBe(200);
      expect(history.body.runs).toEqual([
        { runId: 'run-a', ordinal: 1, status: 'reported', costUsd: 0.5, satisfied: false, confidence: 1, recordedAt: expect.any(String) },
        { runId: 'run-b', ordinal: 2, status: 'reported', costUsd: null, satisfied: true, confidence: 1, recordedAt: expect.any(String) },
      ]);
      expect((await t.http('GET', `/v1/goals/${g.id}/runs`, { token: mallory })).status).toBe(404);

      const late = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: 'run-c', output: { green: true } } });
      expect(late.status).toBe(409);
      expect(late.body.error).toBe('goal_not_active');
      // A recorded run reported again after closing is still a no-op, not an error.
      expect((await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: 'run-b' } })).status).toBe(200);
    });

    it('a failed run never satisfies, whatever its output', async () => {
      const g = await create();
      const res = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: 'run-x' } });
      expect(res.body.completion.lastVerdict).toEqual({ satisfied: false, confidence: 1, runId: 'run-x' });
    });

    it.each([
      ['a missing runId', { output: {} }],
      ['an empty runId', { runId: '' }],
      ['a negative cost', { runId: 'r', costUsd: -1 }],
      ['a string cost', { runId: 'r', costUsd: '1' }],
      ['a client verdict', { runId: 'r', satisfied: true }],
    ])('answers 400 validation_error for a report with %s', async (_n, body) => {
      const g = await create();
      const res = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
      expect((await t.http('GET', `/v1/goals/${g.id}`, { token: alice })).body.progress.iterations).toBe(0);
    });
  });

  describe('bounds on reported runs', () => {
    it('the Nth unsatisfied verdict closes the goal bound-exceeded', async () => {
      const g = await create(manualGoal({ bounds: { maxLoopIterations: 2 } }));
      await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: 'r1', output: { green: false } } });
      const second = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: 'r2', output: { green: false } } });
      expect(second.body).toMatchObject({ state: 'bound-exceeded', progress: { iterations: 2 }, continuation: { armRef: null } });
      const ev = await goalEvents(g.id);
      expect(ev.map((e) => e.type)).toEqual(['goal.evaluated', 'goal.evaluated', 'goal.closed']);
      expect(ev[2].payload).toEqual({ goalId: g.id, finalState: 'bound-exceeded' });
    });

    it('a satisfied verdict on the last allowed iteration wins', async () => {
      const g = await create(manualGoal({ bounds: { maxLoopIterations: 2 } }));
      await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: 'r1', output: { green: false } } });
      const last = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: 'r2', output: { green: true } } });
      expect(last.body.state).toBe('satisfied');
    });

    it('crossing the cost ceiling closes the goal without judging the run (cost counted once per run)', async () => {
      const g = await create(manualGoal({ bounds: { maxCostUsd: 1 } }));
      const a = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: 'r1', costUsd: 0.6, output: { green: false } } });
      expect(a.body.state).toBe('active');
      await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: 'r1', costUsd: 0.6, output: { green: false } } });
      expect(a.body.state).toBe('active');
      const b = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: 'r2', costUsd: 0.6, output: { green: true } } });
      expect(b.body).toMatchObject({ state: 'bound-exceeded', progress: { iterations: 1, contributingRunIds: ['r1', 'r2'] }, completion: { lastVerdict: { runId: 'r1' } } });
      const history = await t.http('GET', `/v1/goals/${g.id}/runs`, { token: alice });
      expect(history.body.runs.map((r: { runId: string; satisfied: boolean | null; costUsd: number }) => [r.runId, r.satisfied, r.costUsd])).toEqual([
        ['r1', false, 0.6],
        ['r2', null, 0.6],
      ]);
      expect((await goalEvents(g.id)).map((e) => e.type)).toEqual(['goal.evaluated', 'goal.closed']);
    });

    it('a run reported past the wall-clock deadline closes the goal unjudged', async () => {
      const g = await create(manualGoal({ bounds: { runTimeoutMs: 1000 } }));
      clock.advance(1000);
      const onTime = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: 'r1', output: { green: false } } });
      expect(onTime.body.state).toBe('active');
      clock.advance(1);
      const late = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: 'r2', output: { green: true } } });
      expect(late.body).toMatchObject({ state: 'bound-exceeded', progress: { iterations: 1 } });
    });
  });

  describe('pause, resume, abandon', () => {
    it('pause and resume keep the wire state active and show in the status', async () => {
      const g = await create();
      for (const base of ['/v1/goals', '/v1/host/sample/goals']) {
        const paused = await t.http('POST', `${base}/${g.id}/pause`, { token: alice });
        expect(paused.status).toBe(200);
        expect(paused.body.state).toBe('active');
        expect((await t.http('GET', `/v1/goals/${g.id}/status`, { token: alice })).body.paused).toBe(true);
        const resumed = await t.http('POST', `${base}/${g.id}/resume`, { token: alice });
        expect(resumed.status).toBe(200);
        expect((await t.http('GET', `/v1/goals/${g.id}/status`, { token: alice })).body.paused).toBe(false);
      }
    });

    it('abandon closes the goal once (one goal.closed), and a closed goal cannot be paused or edited (409)', async () => {
      const g = await create();
      const res = await t.http('POST', `/v1/host/sample/goals/${g.id}/abandon`, { token: alice });
      expect(res.status).toBe(200);
      expect(res.body.state).toBe('abandoned');
      const again = await t.http('POST', `/v1/goals/${g.id}/abandon`, { token: alice });
      expect(again.status).toBe(200);
      expect(again.body.state).toBe('abandoned');
      expect((await goalEvents(g.id)).map((e) => [e.type, e.payload.finalState])).toEqual([['goal.closed', 'abandoned']]);
      for (const [method, url, body] of [
        ['POST', `/v1/goals/${g.id}/pause`, undefined],
        ['POST', `/v1/goals/${g.id}/resume`, undefined],
        ['PATCH', `/v1/goals/${g.id}`, { objective: 'x' }],
      ] as Array<[string, string, unknown]>) {
        const r = await t.http(method, url, { token: alice, body });
        expect(r.status).toBe(409);
        expect(r.body.error).toBe('goal_not_active');
      }
    });
  });

  describe('the verifier judge', () => {
    it('takes the verdict from the run’s agent.verified event of the named verifier, and refuses a run without one (409)', async () => {
      const g = await create(manualGoal({ completion: { check: 'verifier', verifierRef: 'critic-1' }, criteria: undefined }));
      const owner = systemPrincipal('acme');
      const runs = t.moduleRef.get(RunService);
      const log = t.moduleRef.get(EventLogService);
      const unverified = await runs.create(owner, 'agent');
      const none = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: unverified.runId } });
      expect(none.status).toBe(409);
      expect(none.body.error).toBe('verdict_unavailable');

      const failed = await runs.create(owner, 'agent');
      await log.append(owner, failed.runId, 'agent.verified', { agentId: 'critic-1', target: 'e1', verdict: 'fail', confidence: 0.3 });
      await log.append(owner, failed.runId, 'agent.verified', { agentId: 'someone-else', target: 'e1', verdict: 'pass', confidence: 1 });
      const r1 = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: failed.runId } });
      expect(r1.body.completion.lastVerdict).toEqual({ satisfied: false, confidence: 0.3, runId: failed.runId });

      const passed = await runs.create(owner, 'agent');
      await log.append(owner, passed.runId, 'agent.verified', { agentId: 'critic-1', target: 'e2', verdict: 'pass', confidence: 0.9 });
      const r2 = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: passed.runId } });
      expect(r2.body).toMatchObject({ state: 'satisfied', completion: { lastVerdict: { satisfied: true, confidence: 0.9 } } });
    });

    it('never reads another tenant’s run events', async () => {
      const g = await create(manualGoal({ completion: { check: 'verifier' }, criteria: undefined }));
      const foreign = systemPrincipal('evil');
      const run = await t.moduleRef.get(RunService).create(foreign, 'agent');
      await t.moduleRef.get(EventLogService).append(foreign, run.runId, 'agent.verified', { agentId: 'critic-1', target: 'e', verdict: 'pass' });
      const res = await t.http('POST', `/v1/goals/${g.id}/runs`, { token: alice, body: { runId: run.runId } });
      expect(res.status).toBe(409);
      expect((await t.http('GET', `/v1/goals/${g.id}`, { token: alice })).body.state).toBe('active');
    });
  });
});
