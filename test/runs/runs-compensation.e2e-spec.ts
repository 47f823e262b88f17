/**
 * RFC 0151 compensation on the real engine: plans minted from recorded facts when a declared trigger
 * fires, inverse actions in reverse completion order (not declaration order), one identity across the
 * retries of an inverse action, a held plan resumed by an authorized operator (cross-tenant 404,
 * non-operator 403, both audited where they should be), a replay that re-fires nothing, a resumed
 * unwind that re-runs nothing completed. Driven through the compensation fixtures (the published
 * chain-pack manifest has no compensation fields yet); the registration refusals are
 * compensation-declaration.spec.ts.
 */
import { sampleDownstream } from '../../src/capabilities/runs/compensation/compensation-sample.executors';
import { CompensationService } from '../../src/capabilities/runs/compensation/compensation.service';
import { createTestApp, TestApp } from '../support/test-app';
import { runEvents, waitForStatus } from './run-kit';

describe('runs: RFC 0151 compensation', () => {
  let t: TestApp;
  let key: string;
  let other: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
    key = await t.key({ scopes: ['runs:create', 'runs:read', 'runs:cancel'] });
    other = await t.key({ tenant: 'compensation-other', scopes: ['runs:create', 'runs:read'] });
  });

  afterAll(async () => {
    await t?.close();
  });

  const unwind = async (body: Record<string, unknown>, token = key) => t.http('POST', '/v1/host/sample/test/compensation/unwind', { token, body });

  it('advertises the profile; every snapshot carries compensationStatus (none without a plan)', async () => {
    const d = await t.http('GET', '/.well-known/openwop');
    expect(d.body.capabilities?.compensation ?? d.body.compensation).toEqual({ supported: true, profileVersion: '1', orderingModels: ['reverse-completion'], manualIntervention: true });
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance-compensation-n2-healthy', inputs: { failFirstInverseAttempts: 0 } } });
    expect(r.status).toBe(201);
    expect(r.body.compensationStatus).toBe('none');
    const done = await waitForStatus(t, key, r.body.runId, ['completed']);
    // A healthy run that declares compensators has nothing to unwind: `none`, not `pending`.
    expect(done.compensationStatus).toBe('none');
    expect((await runEvents(t, key, r.body.runId)).some((e) => e.type.startsWith('compensation.'))).toBe(false);
    const list = await t.http('GET', '/v1/runs?limit=5', { token: key });
    expect(list.body.runs.every((s: { compensationStatus?: string }) => typeof s.compensationStatus === 'string')).toBe(true);
  });

  it('unwinds in descending forward-completion order, not declaration order, with recorded inputs', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance-compensation-parallel' } });
    const done = await waitForStatus(t, key, r.body.runId, ['failed']);
    const plan = await waitForPlan(t, r.body.runId);
    expect(plan.status).toBe('completed');
    const outputs = Object.fromEntries(['a', 'b', 'c'].map((id) => [id, (done.nodeStates[id] as { status: string }).status]));
    expect(outputs).toEqual({ a: 'completed', b: 'completed', c: 'completed' });
    // Completed b, c, a: undone a, c, b.
    expect(plan.entries.map((e) => [e.nodeId, e.ordinal])).toEqual([['a', 3], ['c', 2], ['b', 1]]);
    const events = await runEvents(t, key, r.body.runId);
    const charges = Object.fromEntries(events.filter((e) => e.type === 'node.completed' && e.payload.outputs).map((e) => [e.nodeId, (e.payload.outputs as { chargeId?: string }).chargeId]));
    for (const e of plan.entries) expect(e.input).toEqual({ chargeId: charges[e.nodeId], note: `refund of ${charges[e.nodeId]}` });
    // The downstream saw the refunds in that order, each under its action's identity.
    const order = [...sampleDownstream.received.keys()].filter((c) => Object.values(charges).includes(c));
    expect(order).toEqual(['a', 'c', 'b'].map((id) => charges[id]));
    for (const e of plan.entries) expect(sampleDownstream.keys(charges[e.nodeId] as string, e.effectId)).toEqual([e.effectId]);
    const types = events.map((e) => e.type).filter((x) => x.startsWith('compensation.'));
    expect(types).toEqual(['compensation.requested', 'compensation.started', 'compensation.completed']);
    expect((await t.http('GET', `/v1/runs/${r.body.runId}`, { token: key })).body).toEqual(expect.objectContaining({ status: 'failed', compensationStatus: 'completed' }));
  });

  it('a cancel accepted after a committed effect unwinds it (trigger run-cancel)', async () => {
    const r = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'conformance-compensation-cancel' } });
    const until = Date.now() + 20_000;
    while ((await t.http('GET', `/v1/runs/${r.body.runId}`, { token: key })).body.nodeStates?.a?.status !== 'completed') {
      if (Date.now() > until) throw new Error('the charge did not complete');
      await new Promise((res) => setTimeout(res, 100));
    }
    expect((await t.http('POST', `/v1/runs/${r.body.runId}/cancel`, { token: key })).status).toBeLessThan(300);
    await waitForStatus(t, key, r.body.runId, ['cancelled']);
    const plan = await waitForPlan(t, r.body.runId);
    expect([plan.trigger, plan.status, plan.entries.map((e) => e.nodeId)]).toEqual(['run-cancel', 'completed', ['a']]);
    const types = (await runEvents(t, key, r.body.runId)).map((e) => e.type).filter((x) => x.startsWith('compensation.') || x === 'run.cancelled');
    expect(types).toEqual(['compensation.requested', 'run.cancelled', 'compensation.started', 'compensation.completed']);
  });

  it('retries an inverse action under one identity: three attempts, one downstream key', async () => {
    const r = await unwind({ nodes: 2, failFirstInverseAttempts: 2 });
    expect(r.status).toBe(200);
    expect(r.body.compensatedOrder).toEqual([2, 1]);
    const [first, second] = r.body.inverseActions;
    expect(first).toEqual(expect.objectContaining({ ordinal: 2, attempts: 3, outcome: 'completed' }));
    expect(first.downstreamKeys).toEqual([first.effectId, first.effectId, first.effectId]);
    expect(second).toEqual(expect.objectContaining({ ordinal: 1, attempts: 1, outcome: 'completed' }));
    expect(second.effectId).not.toBe(first.effectId);
    expect(r.body.events.map((e: { type: string }) => e.type)).toEqual(['compensation.requested', 'compensation.started', 'compensation.completed']);
  });

  it('holds an exhausted plan for an operator: another tenant 404 (unaudited), a non-operator 403 (audited), the operator resumes it', async () => {
    const held = await unwind({ nodes: 2, hold: true });
    const runId = held.body.runId as string;
    expect(held.body.inverseActions[0]).toEqual(expect.objectContaining({ outcome: 'held', attempts: 3 }));
    expect(held.body.inverseActions[1]).toEqual(expect.objectContaining({ outcome: 'pending', attempts: 0 }));
    expect(held.body.events.map((e: { type: string }) => e.type)).toEqual(['compensation.requested', 'compensation.started', 'compensation.failed', 'compensation.manual_intervention_required']);
    expect((await t.http('GET', `/v1/runs/${runId}`, { token: key })).body.compensationStatus).toBe('manual');

    const op = (actor: Record<string, unknown>, token = key, action = 'retry') => t.http('POST', '/v1/host/sample/test/compensation/operator', { token, body: { runId, action, actor } });
    const cross = await op({ tenantId: 'compensation-other', principalId: 'ops', operator: true });
    expect([cross.status, cross.body.error]).toEqual([404, 'not_found']);
    // The other tenant's own caller cannot reach the run through the seam either.
    expect((await op({ tenantId: 'default', principalId: 'ops', operator: true }, other)).status).toBe(404);
    const plain = await op({ tenantId: 'default', principalId: 'bystander', operator: false });
    expect([plain.status, plain.body.error, plain.body.details?.retriable]).toEqual([403, 'forbidden', false]);
    expect((await t.http('GET', `/v1/runs/${runId}`, { token: key })).body.compensationStatus).toBe('manual');
    const bad = await op({ tenantId: 'default', principalId: 'ops', operator: true }, key, 'skip');
    expect([bad.status, bad.body.error]).toEqual([400, 'validation_error']);
    const ok = await op({ tenantId: 'default', principalId: 'ops', operator: true });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual(expect.objectContaining({ audited: true, compensationStatus: 'completed', planVersion: 1 }));
    const again = await op({ tenantId: 'default', principalId: 'ops', operator: true });
    expect([again.status, again.body.error]).toEqual([409, 'compensation_not_actionable']);

    const events = await runEvents(t, key, runId);
    const decided = events.filter((e) => e.type === 'authorization.decided').map((e) => [e.payload.principal, e.payload.action, e.payload.allowed]);
        // The refusal and both operator decisions (the second allowed, then refused as nothing was left to act on); the other tenant left no trace.
    expect(decided).toEqual([['bystander', 'compensation:retry', false], ['ops', 'compensation:retry', true], ['ops', 'compensation:retry', true]]);
    const plan = await t.app.get(CompensationService).plan({ tenant: 'default' }, runId);
    expect(plan?.entries.map((e) => [e.status, e.attempts])).toEqual([['completed', 4], ['completed', 1]]);
    const audit = (await t.ds.query(`SELECT "entry" FROM "audit_entry" WHERE "tenant" = 'default' AND "entry"->>'action' = 'authorization.decided' AND "entry"->'resource'->>'id' = $1`, [runId])) as Array<{ entry: { actor: { principal: string }; details: Record<string, unknown> } }>;
    expect(audit.map((a) => [a.entry.actor.principal, a.entry.details.allowed])).toEqual([['bystander', false], ['ops', true], ['ops', true]]);
  });

  it('replays from the recorded outcomes: same identities and inputs, nothing re-fired', async () => {
    const presentedBefore = [...sampleDownstream.received.values()].reduce((n, k) => n + k.length, 0);
    const r = await t.http('POST', '/v1/host/sample/test/compensation/replay', { token: key, body: { nodes: 3 } });
    expect(r.status).toBe(200);
    expect(r.body.refiredEffects).toBe(0);
    expect(r.body.source).toHaveLength(3);
    const norm = (xs: Array<Record<string, unknown>>) => xs.map((x) => ({ ordinal: x.ordinal, effectId: x.effectId, input: x.input }));
    expect(norm(r.body.replayed)).toEqual(norm(r.body.source));
    // The source's three refunds reached the downstream; the replay added none.
    expect([...sampleDownstream.received.values()].reduce((n, k) => n + k.length, 0)).toBe(presentedBefore + 3);
    expect((await t.http('GET', `/v1/runs/${r.body.runId}`, { token: key })).body).toEqual(expect.objectContaining({ status: 'failed', compensationStatus: 'completed' }));
  });

  it('resumes an unwind its holder left, from the plan: a completed action is never run again', async () => {
    const r = await unwind({ nodes: 2 });
    const runId = r.body.runId as string;
    const [done, next] = r.body.inverseActions;
    // As a replica dying after the first action completed: the second back to in flight, the plan running, the lease run out.
    const plan = (await t.app.get(CompensationService).plan({ tenant: 'default' }, runId))!;
    const entries = plan.entries.map((e) => (e.position === 1 ? { ...e, status: 'running', attempts: 1, downstreamKeys: [] } : e));
    await t.ds.query(`UPDATE "run_compensation" SET "status" = 'running', "entries" = $2::jsonb, "lease_owner" = 'gone', "lease_until" = now() - interval '1 second' WHERE "run_id" = $1`, [runId, JSON.stringify(entries)]);
    const resumed = await waitForPlan(t, runId);
    expect(resumed.entries.map((e) => [e.status, e.attempts])).toEqual([['completed', 1], ['completed', 2]]);
    const chargeOf = (a: { input: { chargeId: string } }) => a.input.chargeId;
    expect(sampleDownstream.keys(chargeOf(done), done.effectId)).toEqual([done.effectId]);
    // The in-flight action is re-presented under its identity: the downstream sees a retry, not a second obligation.
    expect(sampleDownstream.keys(chargeOf(next), next.effectId)).toEqual([next.effectId, next.effectId]);
    expect((await runEvents(t, key, runId)).filter((e) => e.type === 'compensation.requested')).toHaveLength(1);
  });

  it('seam bodies are checked', async () => {
    for (const body of [{ nodes: 0 }, { nodes: 6 }, { hold: true, fail: false }, { hold: true, failFirstInverseAttempts: 1 }, { failFirstInverseAttempts: 3 }, { extra: 1 }]) {
      const r = await unwind(body);
      expect([JSON.stringify(body), r.status, r.body.error]).toEqual([JSON.stringify(body), 400, 'validation_error']);
    }
    const op = await t.http('POST', '/v1/host/sample/test/compensation/operator', { token: key, body: { runId: 'x', action: 'undo', actor: { tenantId: 'default', principalId: 'p', operator: true } } });
    expect([op.status, op.body.error]).toEqual([400, 'validation_error']);
  });

  async function waitForPlan(app: TestApp, runId: string) {
    const until = Date.now() + 20_000;
    for (;;) {
      const plan = await app.app.get(CompensationService).plan({ tenant: 'default' }, runId);
      if (plan && !['pending', 'running'].includes(plan.status)) return plan;
      if (Date.now() > until) throw new Error(`plan of ${runId} did not settle: ${JSON.stringify(plan)}`);
      await new Promise((res) => setTimeout(res, 100));
    }
  }
});
